import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// The shopping-list app through the SDK: two devices of one user, each a `CloudContainer`, talking to
/// one real server, and three behind a load balancer.
@Suite(.cleansUp) struct RecordDatabaseSyncTests {
    struct World {
        let deployment: TestDeployment
        let app: TestServer.SeededApp

        static func make(_ shape: TestDeployment.Shape) async throws -> World {
            let deployment = try await TestDeployment.start(shape)
            return World(deployment: deployment, app: try await deployment.seedApp())
        }

        func database(_ device: String, email: String = "ann@example.com") async throws -> CloudDatabase {
            let session = try await deployment.signIn(email: email, device: device)
            return CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        }
    }

    @Test(arguments: TestDeployment.Shape.allCases) func shoppingListAcrossTwoDevices(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await World.make(shape)
        let phone = try await world.database("phone")
        let laptop = try await world.database("laptop")
        let zone = try await phone.save(RecordZone(zoneName: "Shopping"))

        var list = Record(recordType: "Lists", zoneID: zone.zoneID)
        list["title"] = "Groceries"
        list = try await phone.save(list)
        var items = [Record]()
        for name in ["milk", "bread", "apples"] {
            var item = Record(recordType: "Items", zoneID: zone.zoneID)
            item["name"] = name
            item["list"] = Reference(list, action: .deleteSelf)
            items.append(item)
        }
        let (saved, _) = try await phone.modifyRecords(saving: items, deleting: [])
        #expect(saved.values.allSatisfy { (try? $0.get()) != nil })

        // The laptop fetches the list's items sorted by name.
        var query = try Query(recordType: "Items", predicate: "list == %@", list.recordID)
        query.sortDescriptors = [.init(key: "name")]
        let fetched = try await laptop.records(matching: query, inZoneWith: zone.zoneID).matchResults
        #expect(fetched.map { $0["name"] as String? } == ["apples", "bread", "milk"])
        #expect(fetched.first?.creatorUserRecordName == list.creatorUserRecordName)

        // A field added later needs no migration.
        var milk = try #require(fetched.last)
        milk["number"] = 2
        milk = try await laptop.save(milk)
        let counted = try await phone.records(
            matching: try Query(recordType: "Items", predicate: "number > 1"), inZoneWith: zone.zoneID)
        #expect(counted.matchResults.map(\.recordID) == [milk.recordID])
        let searched = try await phone.records(
            matching: try Query(recordType: "Items", predicate: "self CONTAINS 'MILK'"), inZoneWith: zone.zoneID)
        #expect(searched.matchResults.map(\.recordID) == [milk.recordID], "a search of all text finds a word in any text field")

        // The phone's copy of milk is now stale: saving it is a conflict carrying all three versions.
        var stale = try #require(items.first { $0["name"] == "milk" })
        stale = try await phone.record(for: stale.recordID)
        let fresh = try await laptop.save(
            {
                var record = milk; record["number"] = 3; return record
            }())
        stale["number"] = 5
        do {
            _ = try await phone.save(stale)
            Issue.record("a stale save must conflict")
        } catch let conflict as RecordConflictError {
            #expect(conflict.serverRecord["number"] == 3 as Int64?)
            #expect(conflict.serverRecord.recordChangeTag == fresh.recordChangeTag)
            #expect(conflict.clientRecord["number"] == 5 as Int64?)
            #expect(conflict.ancestorRecord?["number"] == 2 as Int64?)
        }
        // changedKeys overwrites only what the phone changed.
        let merged = try await phone.modifyRecords(saving: [stale], deleting: [], savePolicy: .changedKeys).saveResults[
            stale.recordID]!.get()
        #expect(merged["number"] == 5 as Int64? && merged["name"] == "milk")

        // The laptop follows the zone's changes; deleting the list deletes its items.
        let before = try await laptop.recordZoneChanges(inZoneWith: zone.zoneID, since: nil)
        #expect(Set(before.modifications.map(\.recordType)) == ["Lists", "Items"])
        try await phone.deleteRecord(withID: list.recordID)
        let after = try await laptop.recordZoneChanges(inZoneWith: zone.zoneID, since: before.changeToken)
        #expect(Set(after.deletions.map(\.recordName)) == Set(([list] + items).map(\.recordID.recordName)))
        #expect(try await laptop.allRecords(matching: Query(recordType: "Items"), inZoneWith: zone.zoneID).isEmpty)

        let zones = try await laptop.databaseChanges(since: nil)
        #expect(zones.modifiedZoneIDs.map(\.zoneName) == ["Shopping"])
        do {
            _ = try Query(recordType: "Items", predicate: "name BEGINSWITH")
            Issue.record("an incomplete predicate must not parse")
        } catch let error as NimbusCore.Predicate.ParseError {
            #expect(error.position > 0)
        }
    }
}
