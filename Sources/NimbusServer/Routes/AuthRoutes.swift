import Hummingbird
import NIOCore
import NimbusCore

/// `/auth/1/...`: accounts, sessions and devices.
struct AuthRoutes {
    let service: AuthService

    func register(on router: Router<AppRequestContext>) {
        let auth = router.group("auth/1")
        auth.post("signup") { request, context in
            try await service.signUp(try await request.decode(as: SignUpRequest.self, context: context))
        }
        auth.post("signin") { request, context in
            try await service.signIn(try await request.decode(as: SignInRequest.self, context: context))
        }
        let page = WebSignInPage(service: service)
        auth.get("web/signin") { request, _ in
            try await page.form(
                Dictionary(
                    request.uri.queryParameters.map { (String($0.key), String($0.value)) }, uniquingKeysWith: { a, _ in a }))
        }
        auth.post("web/signin") { request, _ in
            let body = try await request.body.collect(
                upTo: 16 << 10, orThrow: NimbusError(.requestTooLarge, "the sign-in form is larger than 16 KB"))
            return try await page.submit(DashboardForm(encoded: String(buffer: body)), deviceName: "Web browser")
        }
        let user = auth.group(context: UserRequestContext.self)
        user.post("signout") { _, context in
            try await service.signOut(context.session)
            return HTTPResponse.Status.noContent
        }
        user.get("me") { _, context in try await service.caller(context.session) }
        user.get("profile") { _, context in try await service.profile(context.session) }
        user.put("profile") { request, context in
            try await service.updateProfile(context.session, try await request.decode(as: AccountProfile.self, context: context))
        }
        user.get("devices") { _, context in try await service.devices(context.session) }
        user.post("app-passwords") { request, context in
            try await service.createAppPassword(
                context.session, try await request.decode(as: AppPasswordRequest.self, context: context))
        }
        user.get("app-passwords") { _, context in try await service.appPasswords(context.session) }
        user.delete("app-passwords/:device") { _, context in
            try await service.revokeAppPassword(context.session, deviceID: try context.parameters.require("device"))
            return HTTPResponse.Status.noContent
        }
    }
}
