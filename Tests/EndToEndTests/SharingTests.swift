import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Zone sharing: an owner shares a zone; participants accept and see it in their shared database,
/// read-only or read-write; others never see it.
@Suite(.cleansUp) struct SharingTests {
    static func container(_ server: TestServer, _ app: TestServer.SeededApp, _ email: String) async throws -> CloudContainer {
        CloudContainer(
            identifier: app.container, session: try await server.signIn(email: email, device: email), apiToken: app.apiToken)
    }

    static func item(_ name: String, zone: RecordZoneID) -> Record {
        var record = Record(recordType: "Items", recordID: RecordID(recordName: name, zoneID: zone))
        record["name"] = name
        return record
    }

    @Test func aSharedZoneAppearsInParticipantsSharedDatabases() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let ann = try await Self.container(server, app, "ann@example.com")
        let bob = try await Self.container(server, app, "bob@example.com")
        let cat = try await Self.container(server, app, "cat@example.com")
        let eve = try await Self.container(server, app, "eve@example.com")

        let zone = try await ann.privateCloudDatabase.save(RecordZone(zoneName: "Household")).zoneID
        _ = try await ann.privateCloudDatabase.save(Self.item("milk", zone: zone))
        let share = try await ann.privateCloudDatabase.shareZone(
            zone,
            with: [
                .init(emailAddress: "bob@example.com", permission: .readWrite),
                .init(emailAddress: "cat@example.com", permission: .readOnly),
            ])
        #expect(share.participants.count == 2 && share.participants.allSatisfy { !$0.accepted })

        // Before accepting, the zone is not in bob's shared database.
        #expect(try await bob.sharedCloudDatabase.allRecordZones().isEmpty)
        let sharedZone = try await bob.sharedCloudDatabase.acceptShare(share.shortGUID)
        #expect(sharedZone.zoneName == "Household")
        #expect(sharedZone.ownerName == (try await ann.userRecordName()))
        _ = try await cat.sharedCloudDatabase.acceptShare(share.shortGUID)
        #expect(try await bob.sharedCloudDatabase.allRecordZones().map(\.zoneID) == [sharedZone])

        // Bob (read-write) reads and writes; cat (read-only) reads only; eve sees nothing.
        let seen = try await bob.sharedCloudDatabase.allRecords(matching: Query(recordType: "Items"), inZoneWith: sharedZone)
        #expect(seen.map(\.recordID.recordName) == ["milk"])
        // The owner's own subscriptions see participants' writes, as changes of their private database.
        try await ann.privateCloudDatabase.save(.zone("household", zone))
        let listener = ann.notificationListener()
        defer { listener.stop() }
        let heard = Recorder(listener.notifications)
        #expect(await eventually { listener.isConnected })
        var bread = Self.item("bread", zone: sharedZone)
        bread = try await bob.sharedCloudDatabase.save(bread)
        let notification = await heard.first { $0.subscriptionID == "household" }
        #expect(notification?.databaseScope == "private" && notification?.zoneID.zoneName == "Household")
        #expect(bread.lastModifiedUserRecordName != nil)
        await #expect(throws: NimbusError.self) {
            _ = try await cat.sharedCloudDatabase.save(Self.item("cake", zone: sharedZone))
        }
        #expect(
            try await cat.sharedCloudDatabase.allRecords(matching: Query(recordType: "Items"), inZoneWith: sharedZone).count == 2)
        await #expect(throws: NimbusError.self) { _ = try await eve.sharedCloudDatabase.acceptShare(share.shortGUID) }
        await #expect(throws: NimbusError.self) {
            _ = try await eve.sharedCloudDatabase.records(matching: Query(recordType: "Items"), inZoneWith: sharedZone)
        }
        let changes = try await cat.sharedCloudDatabase.recordZoneChanges(inZoneWith: sharedZone, since: nil)
        #expect(Set(changes.modifications.map(\.recordID.recordName)).isSuperset(of: ["milk", "bread"]))
        #expect(try await cat.sharedCloudDatabase.databaseChanges(since: nil).modifiedZoneIDs == [sharedZone])

        // Participants cannot change the share, and a read-only one does not grow the schema by trying to write.
        await #expect(throws: NimbusError.self) {
            _ = try await bob.sharedCloudDatabase.shareZone(
                sharedZone, with: [.init(emailAddress: "eve@example.com", permission: .readWrite)])
        }
        var colored = Self.item("paint", zone: sharedZone)
        colored["color"] = "red"
        await #expect(throws: NimbusError.self) { _ = try await cat.sharedCloudDatabase.save(colored) }
        let schema = try #require(try await server.store.schemaText(container: app.container, environment: "development"))
        #expect(!schema.contains("color"))
        #expect(try await cat.sharedCloudDatabase.allRecordZones().map(\.zoneID) == [sharedZone], "the share still stands")

        // A participant deleting the share leaves it; it stands for the others.
        try await cat.sharedCloudDatabase.deleteRecord(withID: RecordID(recordName: "cloudkit.zoneshare", zoneID: sharedZone))
        #expect(try await cat.sharedCloudDatabase.allRecordZones().isEmpty)
        await #expect(throws: NimbusError.self) {
            _ = try await cat.sharedCloudDatabase.records(matching: Query(recordType: "Items"), inZoneWith: sharedZone)
        }
        #expect(try await bob.sharedCloudDatabase.allRecordZones().map(\.zoneID) == [sharedZone])
        let remaining = try await ann.privateCloudDatabase.shareZone(
            zone, with: [.init(emailAddress: "bob@example.com", permission: .readWrite)])
        #expect(remaining.participants.map(\.accepted) == [true], "bob's acceptance survives the owner saving the share again")

        // The owner sees bob's write; unsharing removes the zone from participants' shared databases.
        #expect(try await ann.privateCloudDatabase.record(for: RecordID(recordName: "bread", zoneID: zone))["name"] == "bread")
        try await ann.privateCloudDatabase.unshareZone(zone)
        #expect(try await bob.sharedCloudDatabase.allRecordZones().isEmpty)
        await #expect(throws: NimbusError.self) {
            _ = try await bob.sharedCloudDatabase.records(matching: Query(recordType: "Items"), inZoneWith: sharedZone)
        }
    }

    @Test func onlyCustomZonesOfTheOwnersPrivateDatabaseCanBeShared() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let ann = try await Self.container(server, app, "ann@example.com")
        _ = try await Self.container(server, app, "bob@example.com")
        await #expect(throws: NimbusError.self) {
            _ = try await ann.privateCloudDatabase.shareZone(
                .default, with: [.init(emailAddress: "bob@example.com", permission: .readOnly)])
        }
        let zone = try await ann.privateCloudDatabase.save(RecordZone(zoneName: "Z")).zoneID
        await #expect(throws: NimbusError.self) {
            _ = try await ann.privateCloudDatabase.shareZone(
                zone, with: [.init(emailAddress: "nobody@example.com", permission: .readOnly)])
        }
    }
}
