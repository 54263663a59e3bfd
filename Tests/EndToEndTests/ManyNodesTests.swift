import Foundation
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusStore
import NimbusTesting
import NimbusTestingCore
import PostgresNIO
import Testing

@testable import NimbusPostgres

/// Several `nimbus serve` nodes on one PostgreSQL database (and, on one host, one blob folder), with
/// devices signed in through chosen nodes: what each node keeps to itself (push sockets, credential and
/// schema caches) and its bounds. The end-to-end suites of each service run on three nodes behind a load
/// balancer too (`TestDeployment`).
@Suite(.cleansUp) struct ManyNodesTests {
    /// The three-node deployment the end-to-end suites also run on does spread them: one device's requests,
    /// on one kept-alive connection, reach the nodes in turn.
    @Test func aDevicesRequestsThroughTheBalancerReachEveryNodeInTurn() async throws {
        let deployment = try await TestDeployment.start(.threeNodes)
        let app = try await deployment.seedApp()
        let session = try await deployment.signIn(email: "ann@example.com", device: "phone")
        let client = app.keyValueClient(session)
        let before = try #require(try await deployment.requestsPerNode())
        for index in 0..<6 { _ = try await client.modify([.set("key\(index)", .int64(Int64(index)))]) }
        let after = try #require(try await deployment.requestsPerNode())
        #expect(zip(after, before).map { $0 - $1 } == [2, 2, 2])
        #expect(try await client.values().values.count == 6)
    }

    /// An index backfill a node left unfinished (it stopped or died halfway) is finished by a node that keeps
    /// running, with no restart: the periodic jobs' claim, which one node wins each interval, resumes it.
    @Test func aBackfillANodeLeftUnfinishedIsFinishedByAnother() async throws {
        let deployment = try await TestDeployment.start(.threeNodes) { $0.assetCollectionInterval = .milliseconds(400) }
        let app = try await deployment.seedApp()
        let session = try await deployment.signIn(email: "ann@example.com", device: "phone")
        let database = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Shopping")).zoneID
        _ = try await RecordDatabaseAPITests.saveItems(200, in: zone, database)
        try await deployment.nodes[0].indexSystemFields(["___createTime"], of: "Items", container: app.container)
        let store = try #require(deployment.nodes[1].store as? PostgresStore)
        let field = IndexFieldID.of(kind: "Items", field: "___createTime")
        @Sendable func indexed() async throws -> Int64 {
            try await store.rows("SELECT count(*) FROM entry_index WHERE field = \(field)").value(Int64.self) ?? 0
        }
        #expect(try await indexed() == 200)

        // As a node stopped halfway through leaves it: the backfill recorded, the records past its cursor
        // not indexed.
        let halfway = try #require(
            try await store.rows("SELECT zone_id, sequence FROM entries WHERE key = 'item-099'").first?.decode(
                (Int64, Int64).self))
        try await store.rows("DELETE FROM entry_index WHERE field = \(field) AND sequence > \(halfway.1)")
        try await store.rows(
            """
            INSERT INTO index_backfills (container, environment, kind, zone_id, sequence)
            VALUES (\(app.container), 'development', 'Items', \(halfway.0), \(halfway.1))
            """)
        await deployment.nodes[0].stop()
        #expect(try await indexed() == 100)

        // The next interval: a surviving node's claim wins and resumes the backfill.
        deployment.clock.advance(by: 1)
        #expect(try await eventually { try await indexed() == 200 })
        #expect(try await eventually { try await store.pendingBackfills().isEmpty })
    }

    /// Push crosses nodes: a device connected to one node hears of a change made through another (the
    /// listening device never asks; only a push can tell it).
    @Test func aKeySetThroughOneNodeIsPushedToADeviceOnAnother() async throws {
        let nodes = try await TestDeployment.start(.threeNodes).nodes
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
        let nodes = try await TestDeployment.start(.threeNodes).nodes
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
        let nodes = try await TestDeployment.start(.threeNodes).nodes
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
