import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Every form of predicate the SDK parses, sent by the SDK to a real server: each finds exactly the
/// records it describes. The parser's own tests check the filters it builds; these check that the server
/// answers those filters as an app means them.
@Suite(.cleansUp) struct PredicateQueryTests {
    /// A list and four items with a field of every kind queries compare, and then an index on the items'
    /// creation time (which indexes the items saved before it); the saved records by name.
    static func seed(_ database: CloudDatabase, in world: RecordDatabaseSyncTests.World) async throws
        -> (zone: RecordZoneID, list: Record, items: [String: Record])
    {
        let zone = try await database.save(RecordZone(zoneName: "Shopping")).zoneID
        var groceries = Record(recordType: "Lists", recordID: RecordID(recordName: "groceries", zoneID: zone))
        groceries["title"] = "Groceries"
        groceries = try await database.save(groceries)
        let items: [(name: String, number: Int, tags: [String], location: Location, note: String, done: Bool, listed: Bool)] = [
            ("apples", 1, ["fruit"], Location(latitude: 52.52, longitude: 13.405), "crisp red apples", false, true),
            ("avocado", 5, ["fruit", "soft"], Location(latitude: 52.50, longitude: 13.40), "ripe and soft", true, true),
            ("milk", 2, ["dairy", "cold"], Location(latitude: 48.8566, longitude: 2.3522), "fresh whole milk", false, true),
            ("mints", 7, ["sweet"], Location(latitude: 40.7128, longitude: -74.006), "peppermint candy", true, false),
        ]
        var saved = [String: Record]()
        for item in items {
            var record = Record(recordType: "Items", recordID: RecordID(recordName: item.name, zoneID: zone))
            record["name"] = item.name
            record["number"] = item.number
            record["tags"] = item.tags
            record["location"] = item.location
            record["note"] = item.note
            record["done"] = item.done
            if item.listed { record["list"] = Reference(groceries, action: .deleteSelf) }
            saved[item.name] = try await database.save(record)
        }
        try await world.deployment.nodes[0].indexSystemFields(["___createTime"], of: "Items", container: world.app.container)
        return (zone, groceries, saved)
    }

    @Test(arguments: TestDeployment.Shape.allCases) func everyPredicateFormFindsItsRecords(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await RecordDatabaseSyncTests.World.make(shape)
        let database = try await world.database("phone")
        let (zone, groceries, saved) = try await Self.seed(database, in: world)
        let milkCreated = try #require(saved["milk"]?.creationDate)
        // Records saved one after another may share a millisecond, so what a time matches is read off them.
        func created(_ matches: (Date) -> Bool) -> [String] {
            saved.filter { $0.value.creationDate.map(matches) == true }.keys.sorted()
        }
        let berlin = Location(latitude: 52.52, longitude: 13.40)

        let cases: [(predicate: String, arguments: [any RecordValue], expected: [String])] = [
            // The issue's examples.
            ("list == %@", [groceries.recordID], ["apples", "avocado", "milk"]),
            ("name BEGINSWITH 'a' AND number > 3", [], ["avocado"]),
            ("self CONTAINS 'milk'", [], ["milk"]),
            ("self CONTAINS 'SOFT ripe'", [], ["avocado"]),
            ("distanceToLocation:fromLocation:(location, %@) < 5000", [berlin], ["apples", "avocado"]),
            // Comparisons, either way round.
            ("number == 2", [], ["milk"]), ("number = %@", [2], ["milk"]), ("number != 2", [], ["apples", "avocado", "mints"]),
            ("number <> 2", [], ["apples", "avocado", "mints"]), ("number < 2", [], ["apples"]),
            ("number =< 2", [], ["apples", "milk"]),
            ("number > 5", [], ["mints"]), ("number => 5", [], ["avocado", "mints"]), ("5 < number", [], ["mints"]),
            ("2 >= number", [], ["apples", "milk"]), ("number BETWEEN {2, 5}", [], ["avocado", "milk"]),
            ("%K == %@", ["name", "mints"], ["mints"]), ("done == true", [], ["avocado", "mints"]),
            ("done == NO", [], ["apples", "milk"]),
            // Membership and lists.
            ("number IN {1, 7}", [], ["apples", "mints"]), ("NOT number IN {1, 7}", [], ["avocado", "milk"]),
            ("name IN %@", [["milk", "mints"]], ["milk", "mints"]),
            ("'cold' IN tags", [], ["milk"]), ("tags CONTAINS 'fruit'", [], ["apples", "avocado"]),
            ("NOT tags CONTAINS 'fruit'", [], ["milk", "mints"]), ("ANY tags == 'soft'", [], ["avocado"]),
            ("ANY tags IN {'cold', 'sweet'}", [], ["milk", "mints"]), ("ANY tags BEGINSWITH 'so'", [], ["avocado"]),
            // Text.
            ("name BEGINSWITH 'mi'", [], ["milk", "mints"]), ("NOT name BEGINSWITH 'mi'", [], ["apples", "avocado"]),
            // System fields and conjunctions.
            ("recordID == %@", [RecordID(recordName: "milk", zoneID: zone)], ["milk"]),
            ("creationDate >= %@", [milkCreated], created { $0 >= milkCreated }),
            ("creationDate BETWEEN %@", [[milkCreated, milkCreated]], created { $0 == milkCreated }),
            ("TRUEPREDICATE", [], ["apples", "avocado", "milk", "mints"]),
            ("(number > 1 AND number < 7) && NOT name BEGINSWITH 'mi'", [], ["avocado"]),
        ]
        for (predicate, arguments, expected) in cases {
            var query = try Query(recordType: "Items", predicate: predicate, argumentArray: arguments)
            query.sortDescriptors = [.init(key: "name")]
            let found = try await database.records(matching: query, inZoneWith: zone).matchResults
            #expect(found.map(\.recordID.recordName) == expected, "\(predicate)")
        }
    }

    @Test(arguments: TestDeployment.Shape.allCases) func sortDescriptorsOrderByFieldsAndSystemFields(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await RecordDatabaseSyncTests.World.make(shape)
        let database = try await world.database("phone")
        let (zone, _, saved) = try await Self.seed(database, in: world)
        // The server breaks ties by record name, and records saved one after another may share a millisecond.
        let newestFirst = saved.values.sorted {
            ($0.creationDate!, $1.recordID.recordName) > ($1.creationDate!, $0.recordID.recordName)
        }.map(\.recordID.recordName)
        let cases: [([Query.SortDescriptor], [String])] = [
            ([.init(key: "number", ascending: false)], ["mints", "avocado", "milk", "apples"]),
            ([.init(key: "recordID", ascending: false)], ["mints", "milk", "avocado", "apples"]),
            ([.init(key: "done"), .init(key: "name", ascending: false)], ["milk", "apples", "mints", "avocado"]),
            ([.init(key: "creationDate", ascending: false)], newestFirst),
        ]
        for (sorts, expected) in cases {
            var query = try Query(recordType: "Items")
            query.sortDescriptors = sorts
            let found = try await database.records(matching: query, inZoneWith: zone).matchResults
            #expect(found.map(\.recordID.recordName) == expected, "\(sorts)")
        }
    }
}
