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

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let now = server.configuration.now()
        if let token = request.headers[Self.apiTokenHeader] ?? request.uri.queryParameters.get("ckAPIToken") {
            context.credentials.apiToken = await resolveAPIToken(token)
        }
        if let token = Self.sessionToken(in: request) {
            context.credentials.session = await resolveSession(token, now: now)
        }
        if case .success(let token) = context.credentials.apiToken {
            try server.throttle("token:\(token.id)", limit: server.configuration.apiTokenRateLimit, now: now)
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

    private func resolveAPIToken(_ token: String) async -> Result<APITokenRecord, NimbusError> {
        guard Secrets.isAPITokenShaped(token) else {
            return .failure(.authenticationFailed("the API token is not 64 hexadecimal characters"))
        }
        do {
            guard let record = try await server.store.apiToken(digest: Secrets.digest(token.lowercased())), !record.revoked else {
                return .failure(.authenticationFailed("the API token is unknown or revoked"))
            }
            return .success(record)
        } catch {
            return .failure(NimbusError(.tryAgainLater, "could not check the API token; retry", retryAfter: 1))
        }
    }

    private func resolveSession(_ token: String, now: Date) async -> Result<AuthenticatedSession, NimbusError> {
        do {
            guard token.utf8.count <= 256, let session = try await server.store.session(tokenDigest: Secrets.digest(token)) else {
                return .failure(.authenticationFailed("the session token is unknown; sign in again"))
            }
            if session.revoked { return .failure(.authenticationFailed("the session was signed out; sign in again")) }
            if session.expiresAt <= now { return .failure(.authenticationFailed("the session expired; sign in again")) }
            return .success(AuthenticatedSession(accountID: session.accountID, deviceID: session.deviceID, tokenDigest: session.tokenDigest))
        } catch {
            return .failure(NimbusError(.tryAgainLater, "could not check the session; retry", retryAfter: 1))
        }
    }
}
