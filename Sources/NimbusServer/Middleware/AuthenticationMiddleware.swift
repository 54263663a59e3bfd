import HTTPTypes
import Foundation
import Hummingbird
import NIOCore
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
        var request = request
        let now = server.configuration.now()
        let apiToken = request.headers[Self.apiTokenHeader] ?? request.uri.queryParameters.get("ckAPIToken")
        let sessionToken = Self.sessionToken(in: request)
        if let keyID = request.headers[Self.keyIDHeader] {
            guard apiToken == nil, sessionToken == nil else {
                throw NimbusError.authenticationFailed("sign the request or send ckAPIToken and ckWebAuthToken, not both")
            }
            // The signature covers the body, so it is read here and handed on to the route.
            let body = try await request.body.collect(upTo: WireDecoder.maxBodyBytes, orThrow: WireDecoder.tooLarge)
            request.body = RequestBody(buffer: body)
            let key = try await verifySignature(keyID: keyID, request: request, body: Data(buffer: body), now: now)
            try server.throttle("key:\(key.id)", limit: server.configuration.apiTokenRateLimit, now: now)
            context.credentials.serverKey = .success(key)
        } else if apiToken != nil || sessionToken != nil {
            context.credentials = await resolve(apiToken: apiToken, sessionToken: sessionToken, now: now)
        }
        if case .success(let app) = context.credentials.apiToken, !app.token.allows(origin: request.headers[.origin]) {
            context.credentials.apiToken = .failure(
                .authenticationFailed(
                    "the API token is not for pages of \(request.headers[.origin] ?? ""); add the origin to the token's allowed origins"
                ))
        }
        if case .success(let app) = context.credentials.apiToken {
            try server.throttle("token:\(app.token.id)", limit: server.configuration.apiTokenRateLimit, now: now)
        }
        if case .success(let session) = context.credentials.session {
            try server.throttle("session:\(session.tokenDigest)", limit: server.configuration.sessionRateLimit, now: now)
        }
        return try await next(request, context)
    }

    static var keyIDHeader: HTTPField.Name { HTTPField.Name(RequestSignature.keyIDHeader)! }
    static var dateHeader: HTTPField.Name { HTTPField.Name(RequestSignature.dateHeader)! }
    static var signatureHeader: HTTPField.Name { HTTPField.Name(RequestSignature.signatureHeader)! }

    /// Checks a signed request: a known, unrevoked key, a fresh date, and a signature over date, body and path.
    private func verifySignature(keyID: String, request: Request, body: Data, now: Date) async throws -> ServerKeyRecord {
        guard let dateText = request.headers[Self.dateHeader], let signature = request.headers[Self.signatureHeader] else {
            throw NimbusError.authenticationFailed(
                "a signed request needs \(RequestSignature.dateHeader) and \(RequestSignature.signatureHeader) headers")
        }
        guard let date = RequestSignature.parse(dateText), abs(date.timeIntervalSince(now)) <= RequestSignature.freshness else {
            throw NimbusError.authenticationFailed(
                "the request's date is missing, malformed or more than 10 minutes from the server's clock")
        }
        guard Secrets.isAPITokenShaped(keyID), let key = try await server.store.serverKey(id: keyID.lowercased()), !key.revoked
        else {
            throw NimbusError.authenticationFailed("the server-to-server key is unknown or revoked")
        }
        guard
            RequestSignature.verify(
                signature: signature, date: dateText, body: body, path: request.uri.path, publicKeyPEM: key.publicKeyPEM)
        else {
            throw NimbusError.authenticationFailed(
                "the request signature does not verify (date:base64(SHA-256(body)):path, ECDSA P-256)")
        }
        return key
    }

    static func sessionToken(in request: Request) -> String? {
        if let authorization = request.headers[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { return String(parts[1]) }
            // HTTP Basic carries app passwords only: the account's password never signs a request in.
            if let basic = BasicCredentials(authorization: authorization), basic.isAppPassword { return basic.password }
        }
        return request.uri.queryParameters.get("ckWebAuthToken")
    }

    /// Looks both credentials up in one read; either may be absent.
    func resolve(apiToken: String?, sessionToken: String?, now: Date) async -> Credentials {
        let apiTokenShaped = apiToken.map(Secrets.isAPITokenShaped) ?? false
        let sessionShaped = sessionToken.map { !$0.isEmpty && $0.utf8.count <= 256 } ?? false
        let stored: StoredCredentials
        do {
            let sessionDigest = sessionShaped ? sessionToken.map(Secrets.digest) : nil
            let apiTokenDigest = apiTokenShaped ? apiToken.map { Secrets.digest($0.lowercased()) } : nil
            let key = CredentialKey(sessionDigest: sessionDigest, apiTokenDigest: apiTokenDigest)
            stored =
                try await server.credentialCache.value(for: key) {
                    try await server.store.credentials(sessionDigest: sessionDigest, apiTokenDigest: apiTokenDigest)
                } ?? StoredCredentials(session: nil, apiToken: nil, app: nil)
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

/// The user name and password of an `Authorization: Basic` header (RFC 7617).
struct BasicCredentials: Sendable, Equatable {
    var userName: String
    var password: String

    init?(authorization: String) {
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic", parts[1].utf8.count <= 1024,
            let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
            let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        userName = String(text[..<colon])
        password = String(text[text.index(after: colon)...])
    }

    /// Whether the password is shaped like an app password (`Secrets.appPasswordPrefix`).
    var isAppPassword: Bool { password.hasPrefix(Secrets.appPasswordPrefix) }
}
