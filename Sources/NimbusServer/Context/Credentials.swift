import Hummingbird
import NimbusCore
import NimbusStore

/// A signed-in device's session, resolved from its token.
package struct AuthenticatedSession: Sendable, Hashable {
    package var accountID: String
    package var deviceID: String
    package var tokenDigest: String
}

/// An app's API token and the app it belongs to, with the app's entitlements as of this request.
package struct AppCredential: Sendable, Hashable {
    package var token: APITokenRecord
    package var app: App

    /// The one check every service makes before serving an app: its token is for `container` (the
    /// container the request names, or by default the token's own) and the app is entitled to it.
    /// Returns the container.
    @discardableResult
    func requireEntitlement(to container: String? = nil) throws(NimbusError) -> String {
        let container = container ?? token.containerID
        guard token.containerID == container else {
            throw .accessDenied("the API token is for container \(token.containerID), not \(container)")
        }
        guard app.containers.contains(container) else {
            throw .accessDenied(
                "container \(container) is not in app \(app.bundleID)'s entitlements; add it with `nimbus admin entitle`")
        }
        return container
    }
}

/// What the authentication middleware found on a request. `nil` means the credential was absent;
/// a failure means it was present but rejected (wrong, expired, revoked).
package struct Credentials: Sendable {
    var session: Result<AuthenticatedSession, NimbusError>?
    var apiToken: Result<AppCredential, NimbusError>?
    /// A server-to-server key whose signature checked out (CloudKit's signed requests).
    var serverKey: Result<ServerKeyRecord, NimbusError>?
    /// On dashboard pages signed in by cookie: the token every form of the session carries.
    var dashboardCSRF: String?

    /// The session, or the error the caller gets for not having a valid one.
    func requireSession() throws(NimbusError) -> AuthenticatedSession {
        switch session {
        case .none:
            throw NimbusError(
                .authenticationRequired,
                "this request needs a signed-in user: send a session token as `Authorization: Bearer` or `ckWebAuthToken`",
                redirectURL: "/auth/1/signin")
        case .failure(let error): throw error
        case .success(let session): return session
        }
    }

    /// The app's API token, or the error the caller gets for not having a valid one.
    func requireAPIToken() throws(NimbusError) -> AppCredential {
        switch apiToken {
        case .none:
            throw .authenticationFailed("this request needs an API token: send it as `X-Nimbus-API-Token` or `ckAPIToken`")
        case .failure(let error): throw error
        case .success(let token): return token
        }
    }
}

/// A request context that carries credentials, so one middleware can authenticate HTTP and push routes.
package protocol CredentialContext: RequestContext {
    var credentials: Credentials { get set }
}
