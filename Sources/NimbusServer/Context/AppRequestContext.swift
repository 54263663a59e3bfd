import NIOCore
import NimbusStore
import Hummingbird
import HummingbirdWebSocket
import NimbusCore

/// The context of every request before authentication has been required.
package struct AppRequestContext: CredentialContext, WebSocketRequestContext {
    package var coreContext: CoreRequestContextStorage
    package var credentials = Credentials()
    package let webSocket: WebSocketHandlerReference<Self>
    /// The peer's address (nil when the channel has none).
    package let remoteAddress: SocketAddress?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        remoteAddress = source.channel.remoteAddress
    }

    package var requestDecoder: WireDecoder { WireDecoder() }
}

/// The context of routes that need a signed-in device: it cannot exist without a valid session.
package struct UserRequestContext: ChildRequestContext {
    package var coreContext: CoreRequestContextStorage
    package let session: AuthenticatedSession

    package init(context: AppRequestContext) throws {
        session = try context.credentials.requireSession()
        coreContext = context.coreContext
    }

    package var requestDecoder: WireDecoder { WireDecoder() }
}

/// The context of service routes: a signed-in device using an app's API token.
///
/// Whether the app may use the container or store a route names is checked by the route, which knows it.
package struct ServiceRequestContext: ChildRequestContext {
    package var coreContext: CoreRequestContextStorage
    package let session: AuthenticatedSession
    package let appCredential: AppCredential

    package init(context: AppRequestContext) throws {
        // The app credential is checked first, as CloudKit does: without it nothing is reachable.
        appCredential = try context.credentials.requireAPIToken()
        session = try context.credentials.requireSession()
        coreContext = context.coreContext
    }

    package var requestDecoder: WireDecoder { WireDecoder() }
}

/// The context of `/database/1` routes: an app's API token, with a signed-in device when one is given,
/// or a server-to-server signature.
///
/// The public database answers reads without a user, as CloudKit's does; a session token that is sent
/// but wrong still fails the request rather than being ignored.
package struct DatabaseRequestContext: ChildRequestContext {
    package enum Principal: Sendable {
        case app(AppCredential, session: AuthenticatedSession?)
        case serverKey(ServerKeyRecord)
    }

    package var coreContext: CoreRequestContextStorage
    package let principal: Principal

    package init(context: AppRequestContext) throws {
        if let key = context.credentials.serverKey {
            principal = .serverKey(try key.get())
        } else {
            let app = try context.credentials.requireAPIToken()
            switch context.credentials.session {
            case .none: principal = .app(app, session: nil)
            case .failure(let error): throw error
            case .success(let session): principal = .app(app, session: session)
            }
        }
        coreContext = context.coreContext
    }

    package var requestDecoder: WireDecoder { WireDecoder() }
}
