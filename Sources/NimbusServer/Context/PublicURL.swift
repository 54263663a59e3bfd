import HTTPTypes
import Hummingbird

/// The server's address as clients reach it, for the absolute URLs answers carry (asset uploads and
/// downloads, sign-in pages): the configured `--public-url` when there is one (behind a proxy that
/// rewrites the host), otherwise the request's own host, over https when the server serves TLS itself
/// (`tls`) or a proxy says it forwarded https.
enum PublicURL {
    static func base(for request: Request, configured: String?, tls: Bool) -> String {
        if let configured { return configured }
        guard let host = request.head.authority else { return "" }
        let secure = tls || request.headers[HTTPField.Name("X-Forwarded-Proto")!] == "https"
        return (secure ? "https://" : "http://") + host
    }
}
