import AsyncHTTPClient
import Foundation
import NIOCore
import NimbusCore
import NimbusKit
import NimbusPostgres
import NimbusServer
import NimbusStore
import NimbusTestingCore
import Synchronization

/// The server side of an end-to-end test, in either shape an operator runs: one node on its embedded
/// database, or three nodes on one PostgreSQL database (and, on one host, one blob folder) behind a real
/// load balancer. The balancer sends each request to the next node, so every device's requests, and
/// its push socket, reach different nodes: a suite run on both shapes shows that any request may reach
/// any node.
///
/// ```swift
/// @Test(arguments: TestDeployment.Shape.allCases) func … (shape: TestDeployment.Shape) async throws {
///     let deployment = try await TestDeployment.start(shape)
///     let session = try await deployment.signIn(email: "ann@example.com", device: "phone")
/// ```
package final class TestDeployment: Sendable {
    package enum Shape: String, CaseIterable, Sendable, CustomStringConvertible {
        case oneNode = "one node"
        case threeNodes = "three nodes behind haproxy"

        package var description: String { rawValue }
    }

    package let shape: Shape
    /// Where devices connect: the balancer, or the one node.
    package let url: URL
    /// Every node's clock: advancing it moves time on all of them.
    package let clock: ManualClock
    package let dataDirectory: URL
    private let storage: Storage
    private let configure: @Sendable (inout ServerConfiguration) -> Void
    private let ports: [Int]
    private let balancer: TemporaryBalancer?
    private let running: Mutex<[TestServer]>

    /// Starts a deployment on `dataDirectory` (the nodes' shared blob folder; a fresh one unless given);
    /// `configure` adjusts every node's configuration (as `TestServer.start`'s does).
    package static func start(
        _ shape: Shape, dataDirectory: URL? = nil,
        configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestDeployment {
        let clock = ManualClock()
        let dataDirectory = dataDirectory ?? TestServer.temporaryDirectory()
        switch shape {
        case .oneNode:
            let node = try await TestServer.start(dataDirectory: dataDirectory, clock: clock, configure: configure)
            return TestDeployment(
                shape: shape, url: node.url, clock: clock, dataDirectory: dataDirectory, storage: .embedded,
                configure: configure, nodes: [node], balancer: nil)
        case .threeNodes:
            // Freed once the nodes have stopped (cleanups run newest first).
            if let resources = TestResources.current {
                await TestAdmission.severalNodes.enter()
                resources.onCleanup { TestAdmission.severalNodes.leave() }
            }
            let storage = try await Storage.testDatabase()
            var nodes = [TestServer]()
            for _ in 0..<3 {
                nodes.append(
                    try await startNode(
                        dataDirectory: dataDirectory, port: 0, clock: clock, storage: storage, configure: configure))
            }
            let balancer = try await TemporaryBalancer.start(backends: nodes.map(\.port))
            return TestDeployment(
                shape: shape, url: balancer.url, clock: clock, dataDirectory: dataDirectory, storage: storage,
                configure: configure, nodes: nodes, balancer: balancer)
        }
    }

    private init(
        shape: Shape, url: URL, clock: ManualClock, dataDirectory: URL, storage: Storage,
        configure: @escaping @Sendable (inout ServerConfiguration) -> Void, nodes: [TestServer],
        balancer: TemporaryBalancer?
    ) {
        self.shape = shape
        self.url = url
        self.clock = clock
        self.dataDirectory = dataDirectory
        self.storage = storage
        self.configure = configure
        ports = nodes.map(\.port)
        self.balancer = balancer
        running = Mutex(nodes)
    }

    private static func startNode(
        dataDirectory: URL, port: Int, clock: ManualClock, storage: Storage,
        configure: @Sendable (inout ServerConfiguration) -> Void
    ) async throws -> TestServer {
        try await TestServer.start(dataDirectory: dataDirectory, port: port, clock: clock) { configuration in
            configuration.storage = storage
            configure(&configuration)
        }
    }

    package var nodes: [TestServer] { running.withLock { $0 } }

    /// What every node stores in (they share it).
    package var store: any Store { nodes[0].store }

    /// Push sockets open across the nodes.
    package var pushConnectionCount: Int { nodes.reduce(0) { $0 + $1.server.pushConnectionCount } }

    /// How many requests the balancer has sent to each node so far; one node's deployment has no balancer
    /// and answers nil.
    package func requestsPerNode() async throws -> [Int]? {
        guard let balancer else { return nil }
        let response = try await TestServer.rawClient.execute(
            HTTPClientRequest(url: balancer.statisticsURL.absoluteString), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return try TemporaryBalancer.requestsPerNode(statistics: String(buffer: body))
    }

    /// Stops every node gracefully, as SIGTERM does; the balancer stays and refuses requests meanwhile.
    package func stop() async {
        for node in nodes { await node.stop() }
    }

    /// Starts every node again on its port, with the same data.
    package func restart() async throws {
        var restarted = [TestServer]()
        for port in ports {
            restarted.append(
                try await Self.startNode(
                    dataDirectory: dataDirectory, port: port, clock: clock, storage: storage, configure: configure))
        }
        running.withLock { $0 = restarted }
    }

    // MARK: Clients

    /// A team, an app entitled to a container, and an API token for it.
    package func seedApp(bundleID: String = "com.example.Cloudy") async throws -> TestServer.SeededApp {
        try await nodes[0].seedApp(bundleID: bundleID)
    }

    /// Signs up `email` (when new) and signs in as a device named `device`, through the balancer: the
    /// session's requests go wherever it sends them.
    package func signIn(email: String, device: String) async throws -> NimbusSession {
        try await nodes[0].signIn(email: email, device: device, through: url)
    }

    /// A key-value store for one device, keeping its local copy in a fresh directory unless given one.
    package func keyValueStore(
        _ session: NimbusSession, app: TestServer.SeededApp, localDirectory: URL? = nil
    ) throws -> UbiquitousKeyValueStore {
        try nodes[0].keyValueStore(session, app: app, localDirectory: localDirectory)
    }
}
