import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// The parts of `CloudDatabase` an app pages through or cleans up with: query cursors, lookups of
/// several records, paged change feeds, zone and subscription deletion; through the SDK against a real
/// server.
@Suite(.cleansUp) struct RecordDatabaseAPITests {
    /// Saves `count` items numbered from 0 into `zone`, in batches as an app importing them would.
    static func saveItems(_ count: Int, in zone: RecordZoneID, _ database: CloudDatabase) async throws -> [Record] {
        var saved = [Record]()
        for start in stride(from: 0, to: count, by: 200) {
            let records = (start..<min(start + 200, count)).map { number in
                var record = Record(
                    recordType: "Items", recordID: RecordID(recordName: String(format: "item-%03d", number), zoneID: zone))
                record["number"] = number
                record["name"] = "item \(number)"
                return record
            }
            let (results, _) = try await database.modifyRecords(saving: records, deleting: [])
            saved += try records.map { try results[$0.recordID]!.get() }
        }
        return saved
    }

    @Test(arguments: TestDeployment.Shape.allCases) func queriesPageThroughCursorsWithTheKeysAsked(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await RecordDatabaseSyncTests.World.make(shape)
        let database = try await world.database("phone")
        let zone = try await database.save(RecordZone(zoneName: "Import")).zoneID
        _ = try await Self.saveItems(250, in: zone, database)

        var query = try Query(recordType: "Items", predicate: "number >= 20")
        query.sortDescriptors = [.init(key: "number")]
        var (page, cursor) = try await database.records(
            matching: query, inZoneWith: zone, desiredKeys: ["number"], resultsLimit: 100)
        var pages = [page]
        while let next = cursor {
            (page, cursor) = try await database.records(continuingMatchFrom: next)
            pages.append(page)
        }
        #expect(pages.map(\.count) == [100, 100, 30])
        let found = pages.flatMap { $0 }
        #expect(found.map { $0["number"] as Int? } == (20..<250).map { $0 })
        #expect(found.allSatisfy { $0["name"] as String? == nil }, "only the keys asked for")
        #expect(try await database.allRecords(matching: Query(recordType: "Items"), inZoneWith: zone).count == 250)
    }

    @Test(arguments: TestDeployment.Shape.allCases) func lookupsOfSeveralRecordsAnswerEachOne(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await RecordDatabaseSyncTests.World.make(shape)
        let database = try await world.database("phone")
        let zone = try await database.save(RecordZone(zoneName: "Import")).zoneID
        let saved = try await Self.saveItems(3, in: zone, database)
        let missing = RecordID(recordName: "never-saved", zoneID: zone)

        let results = try await database.records(for: saved.map(\.recordID) + [missing], desiredKeys: ["name"])
        #expect(results.count == 4)
        for record in saved {
            let fetched = try #require(try results[record.recordID]?.get())
            #expect(fetched["name"] as String? == record["name"] as String?)
            #expect(fetched["number"] as Int? == nil, "only the keys asked for")
            #expect(fetched.recordChangeTag == record.recordChangeTag)
        }
        #expect(throws: NimbusError.self) { try results[missing]?.get() }
        do {
            _ = try await database.record(for: missing)
            Issue.record("a record never saved must not be found")
        } catch let error as NimbusError {
            #expect(error.code == .notFound)
        }
    }

    @Test(arguments: TestDeployment.Shape.allCases) func zoneChangesPageWithMoreComingAndEndWithTheDeletions(
        shape: TestDeployment.Shape
    ) async throws {
        let world = try await RecordDatabaseSyncTests.World.make(shape)
        let phone = try await world.database("phone")
        let laptop = try await world.database("laptop")
        let zone = try await phone.save(RecordZone(zoneName: "Import")).zoneID
        let saved = try await Self.saveItems(45, in: zone, phone)
        for record in saved.prefix(5) { try await phone.deleteRecord(withID: record.recordID) }

        var token: ServerChangeToken? = nil
        var changed = [String](), deleted = [String](), pages = 0
        repeat {
            let changes = try await laptop.recordZoneChanges(inZoneWith: zone, since: token, resultsLimit: 10)
            #expect(changes.modifications.count + changes.deletions.count <= 10)
            changed += changes.modifications.map(\.recordID.recordName)
            deleted += changes.deletions.map(\.recordName)
            token = changes.changeToken
            pages += 1
            if !changes.moreComing { break }
        } while pages < 100
        #expect(pages == 5, "45 changes, ten a page")
        #expect(changed == saved.dropFirst(5).map(\.recordID.recordName))
        #expect(Set(deleted) == Set(saved.prefix(5).map(\.recordID.recordName)))
        let after = try await laptop.recordZoneChanges(inZoneWith: zone, since: token)
        #expect(after.modifications.isEmpty && after.deletions.isEmpty && !after.moreComing)
    }

    @Test(arguments: TestDeployment.Shape.allCases) func deletingAZoneOrASubscriptionRemovesIt(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await RecordDatabaseSyncTests.World.make(shape)
        let database = try await world.database("phone")
        let zone = try await database.save(RecordZone(zoneName: "Import")).zoneID
        let kept = try await database.save(RecordZone(zoneName: "Kept")).zoneID
        let saved = try await Self.saveItems(3, in: zone, database)
        try await database.save(Subscription.query("big", try Query(recordType: "Items", predicate: "number > 1"), zoneID: zone))
        try await database.save(.zone("import", zone))

        try await database.deleteSubscription(withID: "big")
        #expect(try await database.allSubscriptions().map(\.subscriptionID) == ["import"])
        try await database.deleteSubscription(withID: "import")
        #expect(try await database.allSubscriptions().isEmpty)
        await #expect(throws: NimbusError.self) { try await database.deleteSubscription(withID: "import") }

        try await database.deleteRecordZone(withID: zone)
        #expect(try await database.allRecordZones().map(\.zoneID.zoneName).contains("Kept"))
        #expect(!(try await database.allRecordZones().map(\.zoneID.zoneName).contains("Import")))
        do {
            _ = try await database.record(for: saved[0].recordID)
            Issue.record("a record of a deleted zone must not be found")
        } catch let error as NimbusError {
            #expect(error.code == .zoneNotFound)
        }
        #expect(try await database.allRecords(matching: Query(recordType: "Items"), inZoneWith: kept).isEmpty)
        let changes = try await database.databaseChanges(since: nil)
        #expect(changes.deletedZoneIDs.map(\.zoneName) == ["Import"])
    }
}
