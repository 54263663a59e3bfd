import NimbusStore
import Hummingbird
import HummingbirdWebSocket
import NimbusCore

/// The context of every request before authentication has been required.
public struct AppRequestContext: CredentialContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var credentials = Credentials()
    public let webSocket: WebSocketHandlerReference<Self>

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
    }

    public var requestDecoder: WireDecoder { WireDecoder() }
}

/// The context of routes that need a signed-in device: it cannot exist without a valid session.
public struct UserRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let session: AuthenticatedSession

    public init(context: AppRequestContext) throws {
        session = try context.credentials.requireSession()
        coreContext = context.coreContext
    }

    public var requestDecoder: WireDecoder { WireDecoder() }
}

/// The context of service routes: a signed-in device using an app's API token.
///
/// Whether the app may use the container or store a route names is checked by the route, which knows it.
public struct ServiceRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let session: AuthenticatedSession
    public let appCredential: AppCredential

    public init(context: AppRequestContext) throws {
        // The app credential is checked first, as CloudKit does: without it nothing is reachable.
        appCredential = try context.credentials.requireAPIToken()
        session = try context.credentials.requireSession()
        coreContext = context.coreContext
    }

    public var requestDecoder: WireDecoder { WireDecoder() }
}

/// The context of `/database/1` routes: an app's API token, with a signed-in device when one is given,
/// or a server-to-server signature.
///
/// The public database answers reads without a user, as CloudKit's does; a session token that is sent
/// but wrong still fails the request rather than being ignored.
public struct DatabaseRequestContext: ChildRequestContext {
    public enum Principal: Sendable {
        case app(AppCredential, session: AuthenticatedSession?)
        case serverKey(ServerKeyRecord)
    }

    public var coreContext: CoreRequestContextStorage
    public let principal: Principal

    public init(context: AppRequestContext) throws {
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

    public var requestDecoder: WireDecoder { WireDecoder() }
}
