import Foundation
import Hummingbird
import NimbusCore

/// Answers the dashboard's failures as pages: no session sends the browser to sign in (and back
/// afterwards); any other error is a page saying what went wrong, with the API's code and words.
struct DashboardErrorMiddleware: RouterMiddleware {
    func handle(
        _ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch DashboardRedirect.signIn {
            let back = request.method == .get ? request.uri.description : "/dashboard"
            return DashboardRenderer.redirect(to: "/dashboard/signin?next=" + DashboardLinks.encoded(back))
        } catch {
            let wireError = ErrorMiddleware<AppRequestContext>.wireError(for: error, request: request)
            if wireError.code == .internalError || wireError.code == .tryAgainLater {
                context.logger.error(
                    "dashboard request failed",
                    metadata: [
                        "uuid": "\(wireError.uuid)", "error": "\(String(reflecting: error))", "path": "\(request.uri.path)",
                    ])
            }
            return DashboardRenderer.shared.page(
                "error", ErrorPageModel(error: wireError), status: HTTPResponse.Status(code: wireError.code.httpStatus))
        }
    }
}

struct ErrorPageModel: DashboardPageModel {
    let chrome: DashboardChrome
    let code: String
    let reason: String
    let uuid: String

    init(error: NimbusError) {
        chrome = DashboardChrome(title: error.code == .notFound ? "Not found" : "Something went wrong", viewer: nil)
        code = error.code.rawValue
        reason = error.reason
        uuid = error.uuid
    }
}

/// Building the dashboard's URLs.
enum DashboardLinks {
    /// A value for a URL's query or path segment.
    static func encoded(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// A query string from names and values, skipping absent ones.
    static func query(_ items: [(String, String?)]) -> String {
        let parts = items.compactMap { name, value in value.map { "\(name)=\(encoded($0))" } }
        return parts.isEmpty ? "" : "?" + parts.joined(separator: "&")
    }

    /// Where to go after signing in: only a dashboard page of this server, never another site.
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/dashboard"), !next.hasPrefix("//"), !next.contains("\\") else { return "/dashboard" }
        return next
    }
}
