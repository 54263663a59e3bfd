import Foundation
import NimbusCore
import NimbusKit
import NimbusPostgres
import NimbusServer
import NimbusTesting
import NimbusTestingCore
import Testing

/// Several `nimbus serve` nodes on one PostgreSQL database (and, on one host, one blob folder), with
/// devices signed in through chosen nodes: what each node keeps to itself (push sockets, credential and
/// schema caches) and its bounds. The end-to-end suites of each service run on three nodes behind a load
/// balancer too (`TestDeployment`).
@Suite(.cleansUp) struct ManyNodesTests {
    static func nodes(_ count: Int = 3) async throws -> [TestServer] {
        let location = try PostgresLocation(url: try await TemporaryPostgres.shared().database())
        let data = TestServer.temporaryDirectory()
        var nodes = [TestServer]()
        for _ in 0..<count {
            nodes.append(
                try await TestServer.start(dataDirectory: data) { $0.storage = .postgres(location, connections: 6) })
        }
        return nodes
    }

    /// The three-node deployment the end-to-end suites also run on does spread them: one device's requests,
    /// on one kept-alive connection, reach the nodes in turn.
    @Test func aDevicesRequestsThroughTheBalancerReachEveryNodeInTurn() async throws {
        let deployment = try await TestDeployment.start(.threeNodes)
        let app = try await deployment.seedApp()
        let session = try await deployment.signIn(email: "ann@example.com", device: "phone")
        let client = KeyValueClient(
            client: NimbusClient(session: session, apiToken: app.apiToken), storeIdentifier: app.storeIdentifier)
        let before = try #require(try await deployment.requestsPerNode())
        for index in 0..<6 { _ = try await client.modify([.set("key\(index)", .int64(Int64(index)))]) }
        let after = try #require(try await deployment.requestsPerNode())
        #expect(zip(after, before).map { $0 - $1 } == [2, 2, 2])
        #expect(try await client.values().values.count == 6)
    }

    /// Push crosses nodes: a device connected to one node hears of a change made through another (the
    /// listening device never asks; only a push can tell it).
    @Test func aKeySetThroughOneNodeIsPushedToADeviceOnAnother() async throws {
        let nodes = try await Self.nodes(2)
        let app = try await nodes[0].seedApp()
        let phone = try nodes[0].keyValueStore(
            try await nodes[0].signIn(email: "ann@example.com", device: "phone"), app: app)
        let laptop = try nodes[1].keyValueStore(
            try await nodes[1].signIn(email: "ann@example.com", device: "laptop"), app: app)
        let laptopEvents = Recorder(laptop.changes())
        phone.start()
        laptop.start()
        #expect(await phone.synchronize())
        #expect(await laptop.synchronize())
        #expect(await eventually { laptop.isPushConnected && phone.isPushConnected })
        #expect(nodes[1].server.pushConnectionCount == 1, "the laptop's push socket is on the second node")

        phone.set("chapter 3", forKey: "bookmark")
        let event = await laptopEvents.first { $0.reason == .serverChange }
        #expect(event?.changedKeys == ["bookmark"])
        #expect(laptop.string(forKey: "bookmark") == "chapter 3")
        phone.close()
        laptop.close()
    }

    /// A session signed out through one node stops working on the others within a second (the bound of
    /// each node's credential cache).
    @Test func aSessionSignedOutThroughOneNodeStopsWorkingOnTheOthersWithinASecond() async throws {
        let nodes = try await Self.nodes(2)
        let app = try await nodes[0].seedApp()
        let session = try await nodes[0].signIn(email: "ann@example.com", device: "phone")
        var moved = session
        moved.server = nodes[1].url
        let onSecondNode = CloudContainer(identifier: app.container, session: moved, apiToken: app.apiToken)
        _ = try await onSecondNode.userRecordName()
        try await NimbusAccount.signOut(session)
        // What is tested is the bound itself: a request the second node receives a second after the
        // sign-out is refused.
        try await Task.sleep(until: ContinuousClock.now + .seconds(1))
        await #expect(throws: NimbusError.self) { _ = try await onSecondNode.userRecordName() }
        do {
            _ = try await onSecondNode.userRecordName()
        } catch let error as NimbusError {
            #expect(error.code == .authenticationFailed)
        }
    }

    /// Each node caches schemas; a schema changed through one node reaches the others' next requests (as
    /// soon as its signal arrives: milliseconds), not a cache's lifetime later.
    @Test func aSchemaImportedThroughOneNodeIsWhatAnotherExports() async throws {
        let nodes = try await Self.nodes(2)
        let app = try await nodes[0].seedApp()
        let path = "/admin/1/containers/\(app.container)/schema/development"
        let sessions = [try await nodes[0].signInAdministrator(), try await nodes[1].signInAdministrator()]
        let before = try await nodes[1].request(.GET, path, session: sessions[1])
        #expect(try before.decode(SchemaDocument.self).text.contains("Items") == false, "the second node cached the empty one")
        let schema = try JSONEncoder().encode(
            SchemaDocument(text: "DEFINE SCHEMA\n    RECORD TYPE Items (name STRING QUERYABLE);\n"))
        let imported = try await nodes[0].request(
            .PUT, path, session: sessions[0], json: String(decoding: schema, as: UTF8.self))
        #expect(imported.status == 200, "\(String(decoding: imported.body, as: UTF8.self))")
        #expect(
            try await eventually {
                try await nodes[1].request(.GET, path, session: sessions[1]).decode(SchemaDocument.self).text.contains("Items")
            })
    }
}
