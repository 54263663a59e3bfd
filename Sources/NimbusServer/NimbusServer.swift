import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import NIOHTTP2
import NIOSSL
import HummingbirdWebSocket
import Logging
import NIOCore
import NimbusCore
import NimbusStore
import ServiceLifecycle

/// The Nimbus server: one Hummingbird application over one store.
///
/// ```swift
/// let server = try await NimbusServer(configuration: ServerConfiguration())
/// try await server.run()   // until SIGINT or SIGTERM, then drains in-flight requests
/// ```
package struct NimbusServer: Sendable {
    package let configuration: ServerConfiguration
    let state: ServerState
    /// The TLS certificate and key, when serving HTTPS.
    package let certificates: ServerCertificates?

    /// Opens (creating when needed) the configured storage: by default the data directory and its database.
    /// Throws `CertificateError` when TLS is configured with files it cannot serve.
    package init(configuration: ServerConfiguration, logger: Logger? = nil) async throws {
        var logger = logger ?? Logger(label: "nimbus")
        logger.logLevel = configuration.logLevel
        self.configuration = configuration
        certificates = try configuration.tls.map(ServerCertificates.init)
        if certificates == nil && !Self.isLoopback(configuration.host) {
            logger.warning(
                """
                serving plain HTTP on \(configuration.host): passwords, session tokens and every user's data cross the \
                network unencrypted, and anyone on the way can read them or act as the user. Serve HTTPS with \
                --tls-cert and --tls-key, or listen on 127.0.0.1 behind a proxy that does.
                """)
        }
        let backends = try await Backends.make(configuration, logger: logger)
        // Making the state hashes a decoy password (bcrypt): seconds of CPU, not for a cooperative thread.
        self.state = try await BlockingWork.run { [logger] in
            try ServerState(configuration: configuration, backends: backends, logger: logger)
        }
    }

    /// Whether `host` is reachable from this machine only.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// The scheme clients reach the server with.
    package var scheme: String { certificates == nil ? "http" : "https" }

    package var store: any Store { state.store }

    /// Open push sockets, across all accounts.
    package var pushConnectionCount: Int { state.push.connectionCount }

    /// The API's routes: what the OpenAPI document describes, which the tests check route for route.
    func makeRouter() -> Router<AppRequestContext> {
        let router = Router(context: AppRequestContext.self)
        if let conformance = configuration.documentConformance {
            router.add(middleware: DocumentConformanceMiddleware(conformance: conformance))
        }
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: ActivityMiddleware(recorder: state.activity))
        router.add(middleware: ErrorMiddleware(publicURL: configuration.publicURL, tls: configuration.tls != nil))
        router.add(middleware: AuthenticationMiddleware(server: state))
        SystemRoutes(metrics: ServerMetrics.registry).register(on: router)
        AuthRoutes(service: AuthService(server: state)).register(on: router)
        AdminRoutes(service: AdminService(server: state)).register(on: router)
        KeyValueRoutes(service: KeyValueService(server: state)).register(on: router)
        DatabaseRoutes(service: RecordService(server: state)).register(on: router)
        DocumentRoutes(service: DocumentService(server: state), chunks: ChunkTransfers(server: state)).register(on: router)
        DatabaseRoutes.registerTransfers(AssetTransfers(server: state), on: router)
        DatabaseRoutes.registerCourier(state, on: router)
        PushRoutes.registerUpgradeRequired(on: router)
        return router
    }

    /// Everything served over HTTP: the API, the dashboard's pages (HTML for people, tested in a browser
    /// rather than described to clients) and WebDAV (RFC 4918's protocol, tested with its own clients).
    func makeServedRouter() -> Router<AppRequestContext> {
        let router = makeRouter()
        DashboardRoutes(server: state).register(on: router)
        DAVRoutes(server: state).register(on: router)
        return router
    }

    /// The WebSocket router: only `/push/1`, behind the same authentication.
    func makePushRouter() -> Router<AppRequestContext> {
        let router = Router(context: AppRequestContext.self)
        router.add(middleware: ErrorMiddleware(publicURL: configuration.publicURL, tls: configuration.tls != nil))
        router.add(middleware: AuthenticationMiddleware(server: state))
        PushRoutes(server: state).register(on: router)
        return router
    }

    /// The application, ready to run; `onRunning` receives the bound port (useful with port 0).
    package func makeApplication(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol
    {
        let heartbeat = configuration.heartbeat
        let push = state.push
        let idleTimeout = TimeAmount(configuration.idleTimeout)
        let limits = GuardedHTTPChannel.Limits(
            headTimeout: TimeAmount(configuration.requestHeadTimeout), maxRequestLineBytes: configuration.maxRequestLineBytes,
            maxConnectionsPerAddress: configuration.maxConnectionsPerAddress)
        let connections = ConnectionsPerAddress()
        let pushResponder = makePushRouter().buildResponder()
        let guarded = { @Sendable (responder: @escaping HTTPChannelHandler.Responder, admits: Bool) in
            GuardedHTTPChannel(
                base: HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: pushResponder,
                    configuration: .init(
                        http1: .init(idleTimeout: idleTimeout),
                        ws: .init(autoPing: .enabled(timePeriod: heartbeat), closeTimeout: .seconds(5)))),
                limits: limits, connections: connections, admitsConnections: admits)
        }
        let server: HTTPServerBuilder
        if let certificates {
            var tls = certificates.tlsConfiguration()
            tls.applicationProtocols = NIOHTTP2SupportedALPNProtocols
            let context = try NIOSSLContext(configuration: tls)
            let http2 = HTTP2ChannelConfiguration(idleTimeout: configuration.idleTimeout, gracefulCloseTimeout: .seconds(5))
            server = HTTPServerBuilder { responder in
                NegotiatedHTTPChannel(
                    context: context, http1: guarded(responder, false),
                    http2: HTTP2Channel(responder: responder, configuration: http2))
            }
        } else {
            server = HTTPServerBuilder { responder in guarded(responder, true) }
        }
        var app = Application(
            router: makeServedRouter(),
            server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Nimbus"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: state.logger)
        app.addServices(
            BackgroundJobsService(jobs: state.jobs),
            PushShutdown(push: push),
            WatermarkShutdown(recorder: state.watermarks),
            AssetCollection(
                collector: AssetCollector(server: state), interval: configuration.assetCollectionInterval, logger: state.logger))
        if let relay = state.relay { app.addServices(relay) }
        if let certificates {
            app.addServices(
                CertificateReloading(
                    certificates: certificates, interval: configuration.certificateCheckInterval, logger: state.logger))
        }
        if let interval = configuration.backupInterval, let destination = configuration.backupDirectory {
            app.addServices(
                ScheduledBackups(
                    data: EmbeddedDataDirectory(configuration.dataDirectory), blobs: state.blobs, destination: destination,
                    interval: interval,
                    keep: configuration.backupsKept, logger: state.logger))
        }
        return app
    }

    /// Deletes asset files no record holds and no receipt can still bring into one (the server also does
    /// this every `assetCollectionInterval`); returns how many it deleted.
    package func collectAssets() async throws -> Int {
        try await AssetCollector(server: state).collect()
    }

    /// Removes documents' versions and Recently Deleted items older than the retention period now (the
    /// server does it before each collection); how many it removed.
    package func expireDocuments() async throws -> Int {
        try await DocumentExpiry(server: state).expire()
    }

    /// Creates the first administrator when there is none, returning its one-time credentials.
    package func ensureAdministrator() async throws -> (email: String, password: String)? {
        guard try await state.store.administratorCount() == 0 else { return nil }
        let password = Secrets.password()
        let account = try await AuthService(server: state).createAdministrator(email: "admin@nimbus.local", password: password)
        return (account.email, password)
    }

    /// Creates an administrator with the given credentials (`nimbus admin init`).
    package func createAdministrator(email: String, password: String) async throws {
        _ = try await AuthService(server: state).createAdministrator(email: email, password: password)
    }

    /// Runs until SIGINT or SIGTERM, then shuts down gracefully: in-flight requests complete first.
    package func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await makeApplication(onRunning: onRunning).runService(gracefulShutdownSignals: [.sigterm, .sigint])
    }
}

/// Closes push sockets when the server shuts down, so open WebSockets do not hold shutdown back.
struct PushShutdown: Service {
    let push: PushHub

    func run() async throws {
        try? await gracefulShutdown()
        push.disconnectAll()
    }
}
