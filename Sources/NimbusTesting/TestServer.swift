import Foundation
import Logging
import NimbusCore
import NimbusKit
import NimbusPostgres
import NimbusServer
import NimbusStore
import ServiceLifecycle

#if canImport(Testing)
    import Testing
#endif

/// A real Nimbus server on an ephemeral loopback port with a temporary data directory.
///
/// ```swift
/// let server = try await TestServer.start()
/// defer { Task { await server.stop() } }
/// let app = try await server.seedApp()
/// let session = try await server.signIn(email: "ann@example.com", device: "phone")
/// ```
package final class TestServer: Sendable {
    package let server: NimbusServer
    package let url: URL
    package let port: Int
    package let clock: ManualClock
    package let trust: ServerTrust
    package let dataDirectory: URL
    private let task: Task<Void, any Error>
    private let services: ServiceGroup

    /// Starts a server; `configure` adjusts the test defaults (cheap bcrypt, a manual clock, port 0).
    /// `trust` is how the server's clients (`signIn`) check its certificate when `configure` gives it one.
    /// Nodes of one deployment share their `clock`.
    package static func start(
        dataDirectory: URL? = nil, port: Int = 0, trust: ServerTrust = .system, clock: ManualClock = ManualClock(),
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        var configuration = ServerConfiguration()
        configuration.port = port
        configuration.dataDirectory = dataDirectory ?? Self.temporaryDirectory()
        configuration.bcryptCost = 4
        configuration.logLevel = .warning
        configuration.now = { clock.now() }
        let conformance = DocumentConformance()
        configuration.documentConformance = conformance
        configure(&configuration)
        let server = try await TestServer(configuration: configuration, clock: clock, trust: trust)
        TestResources.current?.onCleanup {
            await server.stop()
            // Every answer the test saw is one the OpenAPI document describes.
            #if canImport(Testing)
                for violation in conformance.violations {
                    Issue.record("an answer the OpenAPI document does not describe: \(violation)")
                }
            #endif
        }
        return server
    }

    /// Where a test server keeps its data. Tests of what must hold whatever the backend (bad input refused
    /// the same way) run once on each.
    package enum Backend: String, CaseIterable, Sendable {
        case embedded, postgres
    }

    /// Starts a server on `backend`: the embedded SQLite database, or a database of its own on the tests'
    /// shared PostgreSQL cluster.
    package static func start(
        on backend: Backend, dataDirectory: URL? = nil, configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        switch backend {
        case .embedded:
            return try await start(dataDirectory: dataDirectory, configure: configure)
        case .postgres:
            let storage = try await Storage.testDatabase()
            return try await start(dataDirectory: dataDirectory) { configuration in
                configuration.storage = storage
                configure(&configuration)
            }
        }
    }

    private init(configuration: ServerConfiguration, clock: ManualClock, trust: ServerTrust) async throws {
        self.clock = clock
        self.trust = trust
        dataDirectory = configuration.dataDirectory
        server = try await NimbusServer(configuration: configuration)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = try server.makeApplication { port in continuation.yield(port) }
        let services = ServiceGroup(configuration: .init(services: [application], logger: Logger(label: "nimbus.test")))
        self.services = services
        task = Task { try await services.run() }
        guard let port = await ports.first(where: { _ in true }) else { throw CancellationError() }
        self.port = port
        // TLS needs a name: its server name indication (which WebSocket clients send) takes no IP address.
        url = URL(string: server.certificates == nil ? "http://127.0.0.1:\(port)" : "https://localhost:\(port)")!
    }

    /// Shuts the server down gracefully, as SIGTERM does, and waits until it has stopped. A server started
    /// in a test of a `@Suite(.cleansUp)` is stopped when the test ends, whether or not it called this.
    package func stop() async {
        await services.triggerGracefulShutdown()
        _ = await task.result
    }

    package var store: any Store { server.store }

    /// A new, unique temporary path (not created), deleted when the running test ends.
    package static func temporaryDirectory() -> URL { TestResources.temporaryDirectory() }

    // MARK: Seeding

    /// A team, an app entitled to a container, and an API token for it.
    package struct SeededApp: Sendable {
        package var teamID: String
        package var bundleID: String
        package var container: String
        package var storeIdentifier: String
        package var apiToken: String
        package var tokenID: String

        /// The app's key-value store over the wire, as `session`'s device.
        package func keyValueClient(_ session: NimbusSession) -> KeyValueClient {
            KeyValueClient(client: NimbusClient(session: session, apiToken: apiToken), storeIdentifier: storeIdentifier)
        }
    }

    package func seedApp(
        teamID: String = "98Z3R5XU29", bundleID: String = "com.example.Cloudy", container: String? = nil
    ) async throws -> SeededApp {
        let container = container ?? "iCloud.\(bundleID)"
        if try await store.teams().contains(where: { $0.teamID == teamID }) == false {
            try await store.createTeam(Team(teamID: teamID, name: "Team \(teamID)"))
        }
        let storeIdentifier = "\(teamID).\(bundleID)"
        try await store.createApp(
            App(bundleID: bundleID, teamID: teamID, keyValueStoreIdentifier: storeIdentifier, containers: []))
        if try await store.container(identifier: container) == nil {
            try await store.createContainer(Container(identifier: container, teamID: teamID))
        }
        try await store.entitle(bundleID: bundleID, container: container)
        let token = Secrets.apiToken()
        let tokenID = UUIDString.random()
        try await store.createAPIToken(
            APITokenRecord(
                id: tokenID, tokenDigest: Secrets.digest(token), containerID: container, bundleID: bundleID, name: "test"))
        return SeededApp(
            teamID: teamID, bundleID: bundleID, container: container, storeIdentifier: storeIdentifier, apiToken: token,
            tokenID: tokenID)
    }

    package static let password = "correct horse battery"

    /// Signs up `email` (when new) and signs in as a device named `device`, through `entry` (a load balancer
    /// in front of this server and others; the server itself unless given): the session talks to it.
    package func signIn(email: String, device: String, deviceID: String? = nil, through entry: URL? = nil) async throws
        -> NimbusSession
    {
        let server = entry ?? url
        if try await store.account(email: email) == nil {
            try await NimbusAccount.signUp(server: server, email: email, password: Self.password, trust: trust)
        }
        return try await NimbusAccount.signIn(
            server: server, email: email, password: Self.password, deviceName: device, deviceID: deviceID, trust: trust)
    }

    /// An administrator's session, for the admin routes.
    package func signInAdministrator() async throws -> NimbusSession {
        let email = "root@nimbus.test"
        if try await store.account(email: email) == nil {
            try await server.createAdministrator(email: email, password: Self.password)
        }
        return try await NimbusAccount.signIn(server: url, email: email, password: Self.password, deviceName: "admin console")
    }

    /// A key-value store for one device, keeping its local copy in a fresh directory unless given one.
    package func keyValueStore(
        _ session: NimbusSession, app: SeededApp, localDirectory: URL? = nil
    ) throws -> UbiquitousKeyValueStore {
        try UbiquitousKeyValueStore(
            configuration: .init(
                session: session, apiToken: app.apiToken, storeIdentifier: app.storeIdentifier,
                localDirectory: localDirectory ?? Self.temporaryDirectory()))
    }
}

extension Storage {
    /// A new database of its own on the tests' shared PostgreSQL cluster, dropped when the test ends; each
    /// node on it pools a few connections.
    package static func testDatabase() async throws -> Storage {
        .postgres(try PostgresLocation(url: try await TemporaryPostgres.shared().database()), connections: 6)
    }
}
