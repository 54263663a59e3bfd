import Foundation
import NimbusCore
import NimbusKit
import NimbusPostgres
import NimbusServer
import NimbusTesting
import NimbusTestingCore
import Testing

/// Several `nimbus serve` nodes on one PostgreSQL database (and, on one host, one blob folder), with
/// devices signed in through different nodes.
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

    @Test func keyValuesWrittenThroughOneNodeAreReadThroughTheOthers() async throws {
        let nodes = try await Self.nodes()
        let app = try await nodes[0].seedApp()
        var devices = [UbiquitousKeyValueStore]()
        for (number, node) in nodes.enumerated() {
            let session = try await node.signIn(email: "ann@example.com", device: "device \(number)")
            devices.append(try node.keyValueStore(session, app: app))
        }
        for (number, device) in devices.enumerated() {
            device.set(Int64(number), forKey: "written by \(number)")
            #expect(await device.synchronize())
        }
        for device in devices {
            #expect(await device.synchronize())
            #expect((0..<nodes.count).map { device.longLong(forKey: "written by \($0)") } == (0..<Int64(nodes.count)).map { $0 })
            device.close()
        }
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

    @Test func recordsSavedThroughOneNodeAreQueriedAndChangedThroughAnother() async throws {
        let nodes = try await Self.nodes(2)
        let app = try await nodes[0].seedApp()
        let phone = CloudContainer(
            identifier: app.container, session: try await nodes[0].signIn(email: "ann@example.com", device: "phone"),
            apiToken: app.apiToken
        ).privateCloudDatabase
        let laptop = CloudContainer(
            identifier: app.container, session: try await nodes[1].signIn(email: "ann@example.com", device: "laptop"),
            apiToken: app.apiToken
        ).privateCloudDatabase
        let zone = try await phone.save(RecordZone(zoneName: "Shopping"))
        var items = [Record]()
        for name in ["milk", "bread", "apples"] {
            var item = Record(recordType: "Items", zoneID: zone.zoneID)
            item["name"] = name
            items.append(item)
        }
        let (saved, _) = try await phone.modifyRecords(saving: items, deleting: [])
        #expect(saved.values.allSatisfy { (try? $0.get()) != nil })

        var query = try Query(recordType: "Items")
        query.sortDescriptors = [.init(key: "name")]
        let fetched = try await laptop.records(matching: query, inZoneWith: zone.zoneID).matchResults
        #expect(fetched.map { $0["name"] as String? } == ["apples", "bread", "milk"])

        // A field the laptop's node adds to the schema is queryable through the phone's.
        var milk = try #require(fetched.last)
        milk["number"] = 2
        milk = try await laptop.save(milk)
        let counted = try await phone.records(
            matching: try Query(recordType: "Items", predicate: "number > 1"), inZoneWith: zone.zoneID)
        #expect(counted.matchResults.map(\.recordID) == [milk.recordID])

        // The phone's copy is stale: saving it through its node is a conflict.
        var stale = try #require(items.first { $0["name"] == "milk" })
        stale = try await phone.record(for: stale.recordID)
        _ = try await laptop.save(
            {
                var record = milk; record["number"] = 3; return record
            }())
        stale["number"] = 5
        await #expect(throws: RecordConflictError.self) { _ = try await phone.save(stale) }
    }
}
