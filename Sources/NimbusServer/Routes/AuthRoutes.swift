import Hummingbird
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
        let user = auth.group(context: UserRequestContext.self)
        user.post("signout") { _, context in
            try await service.signOut(context.session)
            return HTTPResponse.Status.noContent
        }
        user.get("me") { _, context in try await service.caller(context.session) }
        user.get("devices") { _, context in try await service.devices(context.session) }
    }
}
