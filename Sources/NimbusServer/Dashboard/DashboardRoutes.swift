import Foundation
import Hummingbird
import HummingbirdCore
import NimbusCore
import NimbusStore

/// `/dashboard`: the web dashboard, server-rendered pages over the same services as the API.
///
/// Pages read and write through the services the API uses (`SchemaService`, `RecordService`, …), so the
/// dashboard refuses what the API refuses, in the API's words.
struct DashboardRoutes {
    let server: ServerState
    var renderer: DashboardRenderer { .shared }

    func register(on router: Router<AppRequestContext>) {
        let dashboard = router.group("dashboard")
            .add(middleware: DashboardErrorMiddleware())
            .add(middleware: DashboardSessionMiddleware(server: server))
        dashboard.get("assets/:name") { _, context in
            guard let response = DashboardRenderer.asset(try context.parameters.require("name")) else {
                throw NimbusError.notFound("no such file")
            }
            return response
        }
        dashboard.get("signin") { request, context in
            if context.credentials.dashboardCSRF != nil {
                return DashboardRenderer.redirect(to: DashboardLinks.safeNext(request.uri.queryParameters.get("next")))
            }
            return renderer.page("signin", SignInPageModel(next: request.uri.queryParameters.get("next")))
        }
        dashboard.post("signin") { request, context in try await signIn(request) }

        let signedIn = dashboard.group(context: DashboardRequestContext.self)
        signedIn.post("signout") { _, context in
            try await AuthService(server: server).signOut(context.session)
            var response = DashboardRenderer.redirect(to: "/dashboard/signin")
            response.setCookie(sessionCookie(value: "", maxAge: 0))
            return response
        }
        signedIn.get("") { request, context in try await overview(try await viewer(context), query: request.uri) }
        OverviewForms(server: server).register(on: signedIn, viewer: viewer)
        SchemaPages(server: server).register(on: signedIn, viewer: viewer)
        RecordPages(server: server).register(on: signedIn, viewer: viewer)
        UserPages(server: server).register(on: signedIn, viewer: viewer)
        DocumentPages(server: server).register(on: signedIn, viewer: viewer)
        TokenPages(server: server).register(on: signedIn, viewer: viewer)
        ActivityPages(server: server).register(on: signedIn, viewer: viewer)
    }

    /// The signed-in person, read anew for every page: a revoked administrator loses access at once.
    @Sendable func viewer(_ context: DashboardRequestContext) async throws -> DashboardViewer {
        guard let account = try await server.store.account(id: context.session.accountID) else { throw DashboardRedirect.signIn }
        return DashboardViewer(
            account: account, session: context.session, csrfToken: context.csrfToken,
            teams: Set(try await server.store.teamIDs(memberAccountID: account.id)))
    }

    private func signIn(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(
            upTo: 16 << 10, orThrow: NimbusError(.requestTooLarge, "the sign-in form is larger than 16 KB"))
        let form = DashboardForm(encoded: String(buffer: body))
        let email = form.trimmed("email") ?? ""
        let next = DashboardLinks.safeNext(form.value("next"))
        let signedIn: SignInResponse
        do {
            signedIn = try await AuthService(server: server).signIn(
                SignInRequest(
                    email: email, password: form.value("password") ?? "", deviceName: "Web dashboard",
                    deviceID: request.cookies[DashboardSessionMiddleware.deviceCookieName]?.value))
        } catch let error as NimbusError where error.code != .internalError {
            var model = SignInPageModel(next: next)
            model.email = email
            model.chrome.error = error.reason
            return renderer.page("signin", model, status: HTTPResponse.Status(code: error.code.httpStatus))
        }
        var response = DashboardRenderer.redirect(to: next)
        response.setCookie(sessionCookie(value: signedIn.sessionToken, maxAge: Int(server.configuration.sessionLifetime.seconds)))
        response.setCookie(
            Cookie(
                name: DashboardSessionMiddleware.deviceCookieName, value: signedIn.deviceID, maxAge: 400 * 24 * 3600,
                path: "/dashboard", secure: server.configuration.tls != nil, httpOnly: true, sameSite: .strict))
        return response
    }

    private func sessionCookie(value: String, maxAge: Int) -> Cookie {
        Cookie(
            name: DashboardSessionMiddleware.cookieName, value: value, maxAge: maxAge, path: "/dashboard",
            secure: server.configuration.tls != nil, httpOnly: true, sameSite: .strict)
    }

    private func overview(_ viewer: DashboardViewer, query: URI) async throws -> Response {
        renderer.page("overview", try await OverviewPageModel.load(viewer, server: server, query: query))
    }
}

struct SignInPageModel: DashboardPageModel {
    var chrome = DashboardChrome(title: "Sign in", viewer: nil)
    var next: String
    var email = ""

    init(next: String?) { self.next = DashboardLinks.safeNext(next) }
}

/// A signed-in page's handler is given the viewer this way, so no page forgets to load it.
typealias DashboardViewerLoader = @Sendable (DashboardRequestContext) async throws -> DashboardViewer
