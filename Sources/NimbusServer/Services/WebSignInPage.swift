import Foundation
import Hummingbird
import NimbusCore

/// The sign-in page `AUTHENTICATION_REQUIRED` answers point to, as CloudKit's do: a user signs in in a
/// browser and the page hands the app a web auth token (a Nimbus session token), by redirecting to the
/// app's callback URL with `ckWebAuthToken=…`, or by `postMessage({ckWebAuthToken})` to the window that
/// opened it. Tokens go only to origins the server is configured to trust.
struct WebSignInPage: Sendable {
    let service: AuthService
    var server: ServerState { service.server }

    struct Form: Sendable {
        var apiToken: String
        var callback: String?
        var origin: String?
        var email = ""
        var password = ""
    }

    func form(_ query: [String: String]) async throws -> Response {
        let form = Form(apiToken: query["ckAPIToken"] ?? "", callback: query["callback"], origin: query["origin"])
        try await validate(form)
        return Self.html(status: .ok, Self.page(form, error: nil))
    }

    func submit(_ fields: DashboardForm, deviceName: String) async throws -> Response {
        var form = Form(
            apiToken: fields.value("ckAPIToken") ?? "", callback: fields.value("callback"), origin: fields.value("origin"))
        form.email = fields.value("email") ?? ""
        form.password = fields.value("password") ?? ""
        try await validate(form)
        let signedIn: SignInResponse
        do {
            signedIn = try await service.signIn(SignInRequest(email: form.email, password: form.password, deviceName: deviceName))
        } catch let error as NimbusError where error.code == .authenticationFailed || error.code == .throttled {
            return Self.html(
                status: error.code == .throttled ? .tooManyRequests : .unauthorized, Self.page(form, error: error.reason))
        }
        let token = signedIn.sessionToken
        if let callback = form.callback {
            // `validate` accepted it as a URL of a trusted origin.
            guard var components = URLComponents(string: callback) else { throw NimbusError.badRequest("callback is not a URL") }
            components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "ckWebAuthToken", value: token)]
            guard let location = components.string else { throw NimbusError.badRequest("callback is not a URL") }
            return Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
        }
        return Self.html(status: .ok, Self.handOver(token: token, origin: form.origin))
    }

    /// The API token must be one of the server's; callback and origin must be trusted origins.
    private func validate(_ form: Form) async throws {
        guard Secrets.isAPITokenShaped(form.apiToken),
            try await server.store.credentials(sessionDigest: nil, apiTokenDigest: Secrets.digest(form.apiToken.lowercased()))
                .apiToken?
                .revoked == false
        else {
            throw NimbusError.authenticationFailed("the sign-in page needs the app's ckAPIToken")
        }
        if let callback = form.callback {
            guard let url = URL(string: callback), let origin = Self.origin(of: url), trusted(origin) else {
                throw NimbusError.badRequest(
                    "callback \(callback) is not on an origin this server hands tokens to (see --web-origins)")
            }
        }
        if let origin = form.origin, !trusted(origin) {
            throw NimbusError.badRequest("origin \(origin) is not one this server hands tokens to (see --web-origins)")
        }
    }

    private func trusted(_ origin: String) -> Bool {
        server.configuration.webSignInOrigins.contains(origin)
    }

    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme, let host = url.host else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    private static func html(status: HTTPResponse.Status, _ body: String) -> Response {
        Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy:
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
            ],
            body: .init(byteBuffer: .init(string: body)))
    }

    private static func page(_ form: Form, error: String?) -> String {
        let hidden = [("ckAPIToken", form.apiToken), ("callback", form.callback), ("origin", form.origin)].compactMap {
            name, value in
            value.map { #"<input type="hidden" name="\#(name)" value="\#(escape($0))">"# }
        }
        return """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>Sign in to Nimbus</title>
            <style>body{font:16px system-ui;max-width:22em;margin:4em auto}label,input,button{display:block;width:100%;margin:.4em 0}</style>
            </head><body>
            <h1>Sign in</h1>
            \(error.map { #"<p role="alert">\#(escape($0))</p>"# } ?? "")
            <form method="post" action="/auth/1/web/signin">
            \(hidden.joined(separator: "\n"))
            <label>Email <input type="email" name="email" value="\(escape(form.email))" required autocomplete="username"></label>
            <label>Password <input type="password" name="password" required autocomplete="current-password"></label>
            <button type="submit">Sign in</button>
            </form></body></html>
            """
    }

    /// After signing in without a callback: the token goes to the opening window, for a trusted origin only.
    private static func handOver(token: String, origin: String?) -> String {
        let script =
            origin.map { origin in
                "<script>if (window.opener) { window.opener.postMessage({ckWebAuthToken: \(jsonString(token))}, \(jsonString(origin))); window.close(); }</script>"
            } ?? ""
        return """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>Signed in</title></head><body>
            <p>You are signed in. You can close this window.</p>
            \(script)
            </body></html>
            """
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }

    /// A JavaScript string literal, safe inside a script element.
    private static func jsonString(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        let encoded = String(decoding: (try? encoder.encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
        return encoded.replacingOccurrences(of: "<", with: "\\u003c")
    }
}
