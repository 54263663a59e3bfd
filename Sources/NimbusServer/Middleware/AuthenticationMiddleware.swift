import HTTPTypes
import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// Resolves the request's session and API token (without requiring either) and applies their rate limits.
///
/// Routes then require what they need through their context type, so a route that needs a user cannot
/// be reached without one.
struct AuthenticationMiddleware<Context: CredentialContext>: RouterMiddleware {
    let server: ServerState

    static var apiTokenHeader: HTTPField.Name { HTTPField.Name("X-Nimbus-API-Token")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response
    {
        var context = context
        let now = server.configuration.now()
        let apiToken = request.headers[Self.apiTokenHeader] ?? request.uri.queryParameters.get("ckAPIToken")
        let sessionToken = Self.sessionToken(in: request)
        if apiToken != nil || sessionToken != nil {
            context.credentials = await resolve(apiToken: apiToken, sessionToken: sessionToken, now: now)
        }
        if case .success(let app) = context.credentials.apiToken {
            try server.throttle("token:\(app.token.id)", limit: server.configuration.apiTokenRateLimit, now: now)
        }
        if case .success(let session) = context.credentials.session {
            try server.throttle("session:\(session.tokenDigest)", limit: server.configuration.sessionRateLimit, now: now)
        }
        return try await next(request, context)
    }

    static func sessionToken(in request: Request) -> String? {
        if let authorization = request.headers[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { return String(parts[1]) }
        }
        return request.uri.queryParameters.get("ckWebAuthToken")
    }

    /// Looks both credentials up in one read; either may be absent.
    private func resolve(apiToken: String?, sessionToken: String?, now: Date) async -> Credentials {
        let apiTokenShaped = apiToken.map(Secrets.isAPITokenShaped) ?? false
        let sessionShaped = sessionToken.map { !$0.isEmpty && $0.utf8.count <= 256 } ?? false
        let stored: StoredCredentials
        do {
            let sessionDigest = sessionShaped ? sessionToken.map(Secrets.digest) : nil
            let apiTokenDigest = apiTokenShaped ? apiToken.map { Secrets.digest($0.lowercased()) } : nil
            stored = try await server.credentialCache.credentials(sessionDigest: sessionDigest, apiTokenDigest: apiTokenDigest) {
                try await server.store.credentials(sessionDigest: sessionDigest, apiTokenDigest: apiTokenDigest)
            }
        } catch {
            server.logger.error("credential lookup failed", metadata: ["error": "\(error)"])
            let unavailable = NimbusError(.tryAgainLater, "could not check credentials; retry", retryAfter: 1)
            return Credentials(
                session: sessionToken.map { _ in .failure(unavailable) }, apiToken: apiToken.map { _ in .failure(unavailable) })
        }
        var credentials = Credentials()
        if apiToken != nil {
            if !apiTokenShaped {
                credentials.apiToken = .failure(.authenticationFailed("the API token is not 64 hexadecimal characters"))
            } else if let token = stored.apiToken, !token.revoked, let app = stored.app {
                credentials.apiToken = .success(AppCredential(token: token, app: app))
            } else {
                credentials.apiToken = .failure(.authenticationFailed("the API token is unknown or revoked"))
            }
        }
        if sessionToken != nil {
            if let session = stored.session {
                if session.revoked {
                    credentials.session = .failure(.authenticationFailed("the session was signed out; sign in again"))
                } else if session.expiresAt <= now {
                    credentials.session = .failure(.authenticationFailed("the session expired; sign in again"))
                } else {
                    credentials.session = .success(
                        AuthenticatedSession(
                            accountID: session.accountID, deviceID: session.deviceID, tokenDigest: session.tokenDigest))
                }
            } else {
                credentials.session = .failure(.authenticationFailed("the session token is unknown; sign in again"))
            }
        }
        return credentials
    }
}
