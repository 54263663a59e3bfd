import Crypto
import Foundation
import Hummingbird
import NimbusCore

/// Resolves the dashboard's session cookie into the request's session, and refuses a form that did not
/// come from one of the dashboard's own pages.
///
/// The dashboard authenticates by cookie only, and only under `/dashboard`: a cookie never reaches the
/// API, so no other site can make a browser call the API with it. The cookie is `HttpOnly`,
/// `SameSite=Strict` and, under TLS, `Secure`. Every state-changing request also carries a token derived
/// from the session (a field of every form, or `csrf=` in the query of a file upload), and a browser's
/// `Origin`, when sent, must be this server.
struct DashboardSessionMiddleware: RouterMiddleware {
    let server: ServerState

    static let cookieName = "nimbus_dashboard"
    /// The device the browser signed in as, so signing in again reuses it rather than adding devices.
    static let deviceCookieName = "nimbus_dashboard_device"
    static let maxFormBytes = 4 << 20

    func handle(
        _ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        var request = request
        context.credentials = Credentials()
        if let token = request.cookies[Self.cookieName]?.value, !token.isEmpty {
            let now = server.configuration.now()
            let resolved = await AuthenticationMiddleware<AppRequestContext>(server: server).resolve(
                apiToken: nil, sessionToken: token, now: now)
            if case .success(let session) = resolved.session {
                try server.throttle("session:\(session.tokenDigest)", limit: server.configuration.sessionRateLimit, now: now)
                context.credentials.session = resolved.session
                context.credentials.dashboardCSRF = Self.csrfToken(forSession: token)
            }
        }
        if request.method != .get && request.method != .head {
            try checkOrigin(request)
            if let expected = context.credentials.dashboardCSRF {
                request = try await checkCSRF(request, expected: expected)
            }
        }
        return try await next(request, context)
    }

    /// The form token of a session: derived from its secret, so it needs no storage and another site,
    /// which cannot read the cookie, cannot compute it.
    static func csrfToken(forSession token: String) -> String {
        Secrets.hex(SHA256.hash(data: Data(("nimbus-dashboard-form\u{0}" + token).utf8)))
    }

    private func checkOrigin(_ request: Request) throws {
        guard let origin = request.headers[.origin] else { return }
        let host = request.head.authority ?? ""
        guard let url = URL(string: origin), let originHost = url.host,
            originHost + (url.port.map { ":\($0)" } ?? "") == host
        else {
            throw NimbusError.accessDenied("the form was sent from another site (\(origin))")
        }
    }

    /// Reads a form body (kept for the route) and checks its token; a multipart upload carries it in the query.
    private func checkCSRF(_ request: Request, expected: String) async throws -> Request {
        var request = request
        var sent = request.uri.queryParameters.get("csrf")
        if request.headers[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true {
            let body = try await request.body.collect(
                upTo: Self.maxFormBytes, orThrow: NimbusError(.requestTooLarge, "the form is larger than 4 MB"))
            request.body = RequestBody(buffer: body)
            sent = DashboardForm(encoded: String(buffer: body)).value("csrf") ?? sent
        }
        guard let sent, Secrets.constantTimeEquals(sent, expected) else {
            throw NimbusError.accessDenied("the form expired or did not come from this dashboard; reload the page and try again")
        }
        return request
    }
}
