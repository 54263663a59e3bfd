import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NimbusCore
import NimbusStore

/// `/dav/{container}/…`: every container's documents over WebDAV (RFC 4918, classes 1 and 2), one more door
/// onto the document service: a write here is a document commit (versions, conflicts, Recently Deleted,
/// quota and push to the user's devices apply), and a device's change shows here at once. A container's
/// development documents are at `/dav/{container}/`, its production ones at `/dav/{container} (production)/`
/// (`DAVContainerFolder`); `/dav/` lists the folders of the containers the user keeps documents in.
///
/// Clients sign in with HTTP Basic and an app password (`nimbus profile --app-password NAME`), never the
/// account's password, and only over TLS, except from this machine.
struct DAVRoutes {
    let server: ServerState

    static let methods = [
        "OPTIONS", "PROPFIND", "PROPPATCH", "GET", "HEAD", "PUT", "DELETE", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK",
    ]
    static let realm = "Nimbus"

    func register(on router: Router<AppRequestContext>) {
        for name in Self.methods {
            guard let method = HTTPRequest.Method(name) else { continue }
            for path in ["dav", "dav/**"] {
                router.on(RouterPath(path), method: method) { request, context in await respond(request, context) }
            }
        }
    }

    private func respond(_ request: Request, _ context: AppRequestContext) async -> Response {
        do {
            if request.method == .options { return DAVHandler.options() }
            try requireSecureTransport(request, context)
            let session = try await signIn(request, context)
            let handler = try await DAVHandler.make(server: server, request: request, session: session)
            return try await handler.respond()
        } catch {
            let davError = DAVError.from(error, request: request)
            if davError.error.code == .internalError {
                server.logger.error(
                    "WebDAV request failed",
                    metadata: [
                        "uuid": "\(davError.error.uuid)", "error": "\(String(reflecting: error))", "path": "\(request.uri.path)",
                    ])
            }
            return davError.response(realm: Self.realm)
        }
    }

    private func requireSecureTransport(_ request: Request, _ context: AppRequestContext) throws {
        guard
            Self.allowsPasswords(
                tls: server.configuration.tls != nil, publicURL: server.configuration.publicURL, peer: context.remoteAddress)
        else {
            throw DAVError(
                .forbidden, .accessDenied,
                "WebDAV signs in with a password, so it is served over HTTPS only (or from this machine); start the server with TLS"
            )
        }
    }

    /// A password crosses the wire with every WebDAV request, so plain HTTP is refused unless the client is on
    /// this machine or the operator says a proxy in front terminates TLS (an https public URL).
    static func allowsPasswords(tls: Bool, publicURL: String?, peer: SocketAddress?) -> Bool {
        tls || publicURL?.lowercased().hasPrefix("https://") == true || peer?.isLoopback == true
    }

    private func signIn(_ request: Request, _ context: AppRequestContext) async throws -> AuthenticatedSession {
        let basic = request.headers[.authorization].flatMap(BasicCredentials.init(authorization:))
        if let basic, !basic.isAppPassword {
            throw DAVError(
                .unauthorized, .authenticationFailed,
                "WebDAV takes an app password, never the account's password: create one with `nimbus profile --app-password NAME`"
            )
        }
        guard context.credentials.session != nil else {
            throw DAVError(.unauthorized, .authenticationRequired, "sign in with your email and an app password")
        }
        let session = try context.credentials.requireSession()
        let email = try await server.accountEmails.value(for: session.accountID) {
            try await server.store.account(id: session.accountID)?.email
        }
        guard let email else { throw DAVError(.unauthorized, .authenticationFailed, "the account no longer exists") }
        // The user name must be the password's own account, so a password pasted under the wrong name fails
        // loudly instead of opening someone's documents under another's name.
        if let basic, basic.userName.lowercased() != email.lowercased(), basic.userName != session.accountID {
            throw DAVError(.unauthorized, .authenticationFailed, "this app password belongs to another user name")
        }
        return session
    }
}

extension SocketAddress {
    /// Whether the peer is on this machine (127.0.0.0/8 or ::1).
    var isLoopback: Bool {
        switch self {
        case .v4: return ipAddress?.hasPrefix("127.") == true
        case .v6: return ipAddress == "::1" || ipAddress?.hasPrefix("::ffff:127.") == true
        case .unixDomainSocket: return true
        }
    }
}
