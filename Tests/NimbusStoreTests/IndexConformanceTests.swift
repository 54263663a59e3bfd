import Foundation
import NimbusCore
@testable import NimbusPostgres
@testable import NimbusStore
import NimbusTestingCore
import Testing

/// Zone transactions, zone management and index queries, run per backend.
@Suite(.cleansUp) struct IndexConformanceTests {
    static let service = ZoneAddress.Service.records(
        container: "iCloud.com.example.Cloudy", environment: "development", database: "private")

    func makeZone(_ store: any Store, _ name: String = "Lists", account: String? = nil) async throws -> ZoneKey {
        let accountID: String
        if let account {
            accountID = account
        } else {
            accountID = Secrets.userRecordName()
            try await store.createAccount(
                AccountRecord(
                    id: accountID, email: "\(accountID)@example.com", passwordHash: "x", isAdministrator: false, createdAt: Date()
                ))
        }
        return ZoneKey(accountID: accountID, address: ZoneAddress(service: Self.service, name: name))
    }

    /// Saves items of a shopping list: name (text), number (integer), list (text), tags (list of text).
    func saveItem(
        _ store: any Store, _ zone: ZoneKey, _ key: String, name: String, number: Int64, list: String, tags: [String] = [],
        location: (Double, Double)? = nil
    ) async throws {
        _ = try await store.transact(zone, creating: true) { transaction in
            try transaction.put(key, payload: Data(name.utf8), size: name.utf8.count)
            var rows = [
                IndexEntry(field: "name", value: .text(name)), IndexEntry(field: "number", value: .integer(number)),
                IndexEntry(field: "list", value: .text(list)),
            ]
            rows += tags.enumerated().map { IndexEntry(field: "tags", position: $0.offset, value: .text($0.element)) }
            if let (latitude, longitude) = location {
                rows.append(IndexEntry(field: "location", value: .point(latitude: latitude, longitude: longitude)))
            }
            try transaction.index(key, kind: "Items", rows: rows)
        }
    }

    func keys(_ store: any Store, _ query: IndexQuery) async throws -> [String] {
        try await store.query(query).map(\.entry.key)
    }

    @Test(arguments: StoreBackend.allCases)
    func aTransactionReadsItsOwnWritesAndAThrowChangesNothing(_ backend: StoreBackend) async throws {
        struct Refused: Error {}
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        await #expect(throws: StoreError.missing("zone Lists")) {
            _ = try await store.transact(zone, creating: false) { _ in }
        }
        let (seen, state) = try await store.transact(zone, creating: true) { transaction in
            try transaction.put("a", payload: Data("1".utf8), size: 1)
            return try transaction.entry("a")?.payload
        }
        #expect(seen == Data("1".utf8))
        #expect(state.sequence == 1)
        await #expect(throws: Refused.self) {
            _ = try await store.transact(zone, creating: false) { transaction in
                try transaction.put("a", payload: nil, size: 0)
                try transaction.put("b", payload: Data("2".utf8), size: 1)
                try transaction.index("b", kind: "Items", rows: [IndexEntry(field: "name", value: .text("x"))])
                throw Refused()
            }
        }
        #expect(try await store.entries(zone, keys: ["a", "missing"]).map(\.payload) == [Data("1".utf8)])
        #expect(try await keys(store, IndexQuery(zones: [zone], kind: "Items", limit: 10)) == [])
    }

    @Test(arguments: StoreBackend.allCases)
    func equalityFilterWithSortAndPaging(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        for (key, name, list) in [
            ("1", "milk", "groceries"), ("2", "bread", "groceries"), ("3", "nails", "hardware"), ("4", "apples", "groceries"),
        ] {
            try await saveItem(store, zone, key, name: name, number: Int64(key)!, list: list)
        }
        let byName = IndexQuery(
            zones: [zone], kind: "Items", conditions: [IndexCondition(field: "list", .equal(.text("groceries")))],
            sort: [IndexSort(field: "name")], limit: 2)
        let first = try await store.query(byName)
        #expect(first.map(\.entry.key) == ["4", "2"])
        var next = byName
        next.after = first.last?.position
        #expect(try await keys(store, next) == ["1"])
        var descending = byName
        descending.sort = [IndexSort(field: "number", ascending: false)]
        descending.limit = 10
        #expect(try await keys(store, descending) == ["4", "2", "1"])
    }

    @Test(arguments: StoreBackend.allCases)
    func everyKindOfMatch(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        try await saveItem(
            store, zone, "1", name: "milk", number: 1, list: "g", tags: ["dairy", "cold"], location: (52.52, 13.405))
        try await saveItem(store, zone, "2", name: "mints", number: 5, list: "g", tags: ["sweet"], location: (48.8566, 2.3522))
        try await saveItem(store, zone, "3", name: "bread", number: 9, list: "g", location: (52.50, 13.40))
        func matching(_ conditions: IndexCondition...) async throws -> [String] {
            try await keys(
                store,
                IndexQuery(zones: [zone], kind: "Items", conditions: conditions, sort: [IndexSort(field: "number")], limit: 10))
        }
        #expect(try await matching(IndexCondition(field: "name", .prefix("mi"))) == ["1", "2"])
        #expect(try await matching(IndexCondition(field: "name", .prefix("mi"), negated: true)) == ["3"])
        #expect(try await matching(IndexCondition(field: "number", .greaterThan(.integer(1)))) == ["2", "3"])
        #expect(try await matching(IndexCondition(field: "number", .lessThanOrEqual(.integer(5)))) == ["1", "2"])
        #expect(try await matching(IndexCondition(field: "number", .oneOf([.integer(1), .integer(9)]))) == ["1", "3"])
        #expect(try await matching(IndexCondition(field: "tags", .equal(.text("cold")))) == ["1"])
        #expect(try await matching(IndexCondition(field: "tags", .equal(.text("cold")), negated: true)) == ["2", "3"])
        #expect(
            try await matching(
                IndexCondition(field: "tags", .equal(.text("dairy"))), IndexCondition(field: "tags", .equal(.text("cold")))) == [
                    "1"
                ])
        // A condition on several fields holds when any of them has a matching row.
        let either = ["name", "tags"]
        #expect(try await matching(IndexCondition(anyOf: either, .equal(.text("sweet")))) == ["2"])
        #expect(try await matching(IndexCondition(anyOf: either, .oneOf([.text("bread"), .text("cold")]))) == ["1", "3"])
        #expect(try await matching(IndexCondition(anyOf: either, .allOf([.text("milk"), .text("cold")]))) == ["1"])
        #expect(try await matching(IndexCondition(anyOf: either, .equal(.text("milk")), negated: true)) == ["2", "3"])
        let positive = IndexCondition(field: "number", .greaterThan(.integer(0)))
        #expect(try await matching(positive, IndexCondition(anyOf: either, .prefix("swe"))) == ["2"])
        #expect(try await matching(IndexCondition(anyOf: [], .equal(.text("milk")))) == [])
        #expect(try await matching(IndexCondition(anyOf: [], .equal(.text("milk")), negated: true)) == ["1", "2", "3"])
        // Berlin's two points are ~2.3 km apart; Paris is ~880 km away.
        #expect(
            try await matching(IndexCondition(field: "location", .within(meters: 5_000, latitude: 52.52, longitude: 13.405))) == [
                "1", "3",
            ])
        let nearestParis = IndexQuery(
            zones: [zone], kind: "Items",
            sort: [IndexSort(field: "location", order: .distance(latitude: 48.85, longitude: 2.35))], limit: 10)
        #expect(try await keys(store, nearestParis) == ["2", "3", "1"])
        #expect(try await keys(store, IndexQuery(zones: [zone], kind: "Lists", limit: 10)) == [])
    }

    @Test(arguments: StoreBackend.allCases)
    func conditionsAndSortsOnKeys(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        for (key, number) in [("apple", 3), ("apricot", 1), ("banana", 2)] {
            try await saveItem(store, zone, key, name: key, number: Int64(number), list: "g")
        }
        _ = try await store.transact(zone, creating: false) { transaction in
            try transaction.put("avocado-note", payload: Data("x".utf8), size: 1)
            try transaction.index("avocado-note", kind: "Notes", rows: [])
        }
        func keys(_ conditions: [IndexCondition], sort: [IndexSort] = [IndexSort(field: IndexEntry.keyField)]) async throws
            -> [String]
        {
            try await self.keys(store, IndexQuery(zones: [zone], kind: "Items", conditions: conditions, sort: sort, limit: 10))
        }
        let key = IndexEntry.keyField
        #expect(
            try await keys([IndexCondition(field: key, .prefix("ap"))]) == ["apple", "apricot"], "other kinds are not matched")
        #expect(try await keys([IndexCondition(field: key, .equal(.text("banana")))]) == ["banana"])
        #expect(
            try await keys([
                IndexCondition(field: key, .oneOf([.text("apple"), .text("banana")])),
                IndexCondition(field: "number", .greaterThan(.integer(2))),
            ]) == ["apple"])
        #expect(
            try await keys([
                IndexCondition(field: "number", .lessThan(.integer(3))), IndexCondition(field: key, .prefix("ap"), negated: true),
            ]) == ["banana"])
        #expect(try await keys([], sort: [IndexSort(field: key, ascending: false)]) == ["banana", "apricot", "apple"])
        #expect(try await keys([IndexCondition(field: key, .greaterThan(.text("apricot")))]) == ["banana"])
    }

    /// A NUL cannot be stored in SQLite's bound text nor in PostgreSQL's: text is indexed and compared up
    /// to it on both, rather than one backend refusing the write.
    @Test(arguments: StoreBackend.allCases)
    func textIsIndexedAndFoundUpToANul(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        try await saveItem(store, zone, "1", name: "milk\u{0}and more", number: 1, list: "g")
        for value in ["milk", "milk\u{0}whatever"] {
            let query = IndexQuery(
                zones: [zone], kind: "Items", conditions: [IndexCondition(field: "name", .equal(.text(value)))], limit: 10)
            #expect(try await keys(store, query) == ["1"])
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func textThatLooksNumericStaysText(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        try await saveItem(store, zone, "10", name: "007", number: 7, list: "g")
        try await saveItem(store, zone, "9", name: "7", number: 7, list: "g")
        let byPrefix = IndexQuery(
            zones: [zone], kind: "Items", conditions: [IndexCondition(field: "name", .prefix("00"))], limit: 10)
        #expect(try await keys(store, byPrefix) == ["10"])
        let byName = IndexQuery(zones: [zone], kind: "Items", sort: [IndexSort(field: "name")], limit: 10)
        #expect(try await keys(store, byName) == ["10", "9"], "text sorts as text: \"007\" before \"7\"")
        await #expect(throws: StoreError.missing("entry nothing")) {
            _ = try await store.transact(zone, creating: false) { transaction in
                try transaction.index("nothing", kind: "Items", rows: [])
            }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func removedEntriesLeaveTheIndex(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        try await saveItem(store, zone, "1", name: "milk", number: 1, list: "g")
        try await saveItem(store, zone, "2", name: "milk", number: 2, list: "g")
        let seen = try await store.transact(zone, creating: false) { transaction in
            try transaction.put("1", payload: nil, size: 0)
            return try transaction.keys(kind: "Items", field: "name", value: .text("milk"))
        }.result
        #expect(seen == ["2"])
        #expect(try await keys(store, IndexQuery(zones: [zone], kind: "Items", limit: 10)) == ["2"])
    }

    @Test(arguments: StoreBackend.allCases)
    func zonesAreCreatedListedDeletedAndReportedInTheServiceFeed(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let lists = try await makeZone(store, "Lists")
        let archive = try await makeZone(store, "Archive", account: lists.accountID)
        _ = try await store.createZone(lists)
        await #expect(throws: StoreError.duplicate("zone Lists")) { _ = try await store.createZone(lists) }
        _ = try await store.createZone(archive)
        let start = try await store.zoneChanges(accountID: lists.accountID, service: Self.service, after: 0, limit: 10)
        #expect(start.changes.map(\.name) == ["Lists", "Archive"])
        try await saveItem(store, lists, "1", name: "milk", number: 1, list: "g")
        try await store.deleteZone(archive)
        await #expect(throws: StoreError.missing("zone Archive")) { try await store.deleteZone(archive) }
        let later = try await store.zoneChanges(
            accountID: lists.accountID, service: Self.service, after: start.sequence, limit: 10)
        #expect(later.changes == [.init(name: "Lists", deleted: false), .init(name: "Archive", deleted: true)])
        let paged = try await store.zoneChanges(
            accountID: lists.accountID, service: Self.service, after: start.sequence, limit: 1)
        #expect(paged.moreComing && paged.changes.map(\.name) == ["Lists"])
        #expect(try await store.zones(accountID: lists.accountID, service: Self.service).map(\.name) == ["Lists"])
        // A recreated zone is a new zone: its id differs, so old tokens of it are recognisably stale.
        let old = try await store.zoneState(lists)!
        try await store.deleteZone(lists)
        let recreated = try await store.createZone(lists)
        #expect(recreated.id != old.id && recreated.sequence == 0)
        #expect(try await keys(store, IndexQuery(zones: [lists], kind: "Items", limit: 10)) == [])
    }

    /// A deleted zone is gone at once; its entries and index rows, which may be millions, go afterwards in
    /// short steps, whether or not writes to other zones come in between.
    @Test(arguments: StoreBackend.allCases)
    func aDeletedZonesRowsArePurgedInSteps(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let lists = try await makeZone(store, "Lists")
        let other = try await makeZone(store, "Other", account: lists.accountID)
        _ = try await store.transact(lists, creating: true) { transaction in
            for number in 0..<3000 {
                try transaction.put("item\(number)", payload: Data("payload".utf8), size: 7)
                try transaction.index(
                    "item\(number)", kind: "Items", rows: [IndexEntry(field: "number", value: .integer(Int64(number)))])
            }
        }
        try await saveItem(store, other, "kept", name: "kept", number: 1, list: "g")
        let id = try #require(try await store.zoneState(lists)).id
        try await store.deleteZone(lists)
        #expect(try await store.zoneState(lists) == nil)
        #expect(try await store.createZone(lists).sequence == 0, "the name is free at once")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                let purged = try await store.purgeDeletedZones()
                #expect(purged == 3000 * 3, "each entry's row and its two index rows")
            }
            group.addTask {
                for number in 0..<20 {
                    try await saveItem(store, other, "during\(number)", name: "x", number: Int64(number), list: "g")
                }
            }
            try await group.waitForAll()
        }
        if let sqlite = store as? SQLiteStore {
            let left = try await sqlite.pool.read { db in
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT (SELECT count(*) FROM entries WHERE zone_id = ?1) + (SELECT count(*) FROM entry_index WHERE zone_id = ?1)
                            + (SELECT count(*) FROM zone_purges) + (SELECT count(*) FROM zones WHERE id = ?1)
                        """, arguments: [id])
            }
            #expect(left == 0)
        }
        #expect(try await store.purgeDeletedZones() == 0)
        #expect(try await keys(store, IndexQuery(zones: [other], kind: "Items", limit: 100)).count == 21)
    }

    /// A backfill over many entries runs in steps, and one cut off resumes where it stopped.
    @Test(arguments: StoreBackend.allCases)
    func backfillsRunInStepsAndResume(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "Example"))
        try await store.createContainer(Container(identifier: "iCloud.com.example.Cloudy", teamID: "98Z3R5XU29"))
        let zone = try await makeZone(store)
        _ = try await store.transact(zone, creating: true) { transaction in
            for number in 0..<5000 {
                try transaction.put("item\(number)", payload: Data("\(number)".utf8), size: 4)
                try transaction.index("item\(number)", kind: "Items", rows: [])
            }
        }
        let rows: @Sendable (Data) throws -> [IndexEntry] = { payload in
            [IndexEntry(field: "size", value: .integer(Int64(String(decoding: payload, as: UTF8.self))!))]
        }
        let backfill = IndexBackfill(
            container: "iCloud.com.example.Cloudy", environment: "development", kind: "Items", rows: rows)
        func sized() async throws -> Int {
            try await keys(
                store,
                IndexQuery(
                    zones: [zone], kind: "Items", conditions: [IndexCondition(field: "size", .greaterThan(.integer(-1)))],
                    limit: 6000)
            ).count
        }
        _ = try await store.updateSchemaText(container: "iCloud.com.example.Cloudy", environment: "development") { _ in
            ("DEFINE SCHEMA\n", [backfill])
        }
        #expect(try await sized() == 5000)
        #expect(try await store.pendingBackfills().isEmpty)
        // As a stop would leave one: recorded, half done.
        let zoneID = try #require(try await store.zoneState(zone)).id
        let sizeField = IndexFieldID.of(kind: "Items", field: "size")
        if let sqlite = store as? SQLiteStore {
            try await sqlite.pool.write { db in
                try db.execute(sql: "DELETE FROM entry_index WHERE field = ? AND value >= 2500", arguments: [sizeField])
                let halfway = try Int64.fetchOne(db, sql: "SELECT sequence FROM entries WHERE key = 'item2499'")!
                try db.execute(
                    sql:
                        "INSERT INTO index_backfills (container, environment, kind, zone_id, sequence) VALUES ('iCloud.com.example.Cloudy', 'development', 'Items', ?, ?)",
                    arguments: [zoneID, halfway])
            }
        } else {
            let postgres = try #require(store as? PostgresStore)
            _ = try await postgres.rows("DELETE FROM entry_index WHERE field = \(sizeField) AND number >= 2500")
            _ = try await postgres.rows(
                """
                INSERT INTO index_backfills (container, environment, kind, zone_id, sequence)
                SELECT 'iCloud.com.example.Cloudy', 'development', 'Items', zone_id, sequence FROM entries
                WHERE zone_id = \(zoneID) AND key = 'item2499'
                """)
        }
        #expect(try await sized() == 2500)
        let pending = try await store.pendingBackfills()
        #expect(pending.map(\.kind) == ["Items"])
        // Half the zone's changes passed: half its entries, by the estimate the dashboard shows.
        #expect(pending.allSatisfy { (0.45...0.55).contains($0.progress) }, "progress \(pending.map(\.progress))")
        try await store.runBackfill(try #require(pending.first).id, rows: rows)
        #expect(try await sized() == 5000)
        #expect(try await store.pendingBackfills().isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func schemaUpdatesSeeEachOther(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "Example"))
        try await store.createContainer(Container(identifier: "iCloud.com.example.Cloudy", teamID: "98Z3R5XU29"))
        #expect(try await store.schemaText(container: "iCloud.com.example.Cloudy", environment: "development") == nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for line in 0..<10 {
                group.addTask {
                    _ = try await store.updateSchemaText(container: "iCloud.com.example.Cloudy", environment: "development") {
                        (($0 ?? "") + "\(line)\n", [])
                    }
                }
            }
            try await group.waitForAll()
        }
        let text = try await store.schemaText(container: "iCloud.com.example.Cloudy", environment: "development")
        #expect(Set(text?.split(separator: "\n") ?? []).count == 10)
        #expect(try await store.schemaText(container: "iCloud.com.example.Cloudy", environment: "production") == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func aSchemaChangeBackfillsTheLiveEntriesOfItsKindInItsServices(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "Example"))
        try await store.createContainer(Container(identifier: "iCloud.com.example.Cloudy", teamID: "98Z3R5XU29"))
        let lists = try await makeZone(store)
        let production = ZoneKey(
            accountID: lists.accountID,
            address: ZoneAddress(
                service: .records(container: "iCloud.com.example.Cloudy", environment: "production", database: "private"),
                name: "Lists"))
        for zone in [lists, production] {
            try await saveItem(store, zone, "milk", name: "milk", number: 1, list: "groceries")
            try await saveItem(store, zone, "mints", name: "mints", number: 5, list: "groceries")
        }
        try await saveItem(store, lists, "gone", name: "gone", number: 9, list: "groceries")
        _ = try await store.transact(lists, creating: false) { transaction in
            try transaction.put("gone", payload: nil, size: 0)
            // Another kind in the same zone.
            try transaction.put("groceries", payload: Data("groceries".utf8), size: 9)
            try transaction.index("groceries", kind: "Lists", rows: [IndexEntry(field: "name", value: .text("groceries"))])
        }
        // Each entry gets a row made of its payload; "milk" already has one of them, which stays.
        _ = try await store.transact(lists, creating: false) { transaction in
            try transaction.put("milk", payload: Data("milk".utf8), size: 4)
            try transaction.index(
                "milk", kind: "Items",
                rows: [IndexEntry(field: "name", value: .text("milk")), IndexEntry(field: "size", value: .integer(4))])
        }
        let backfill = IndexBackfill(container: "iCloud.com.example.Cloudy", environment: "development", kind: "Items") {
            payload in
            [IndexEntry(field: "size", value: .integer(Int64(payload.count)))]
        }
        _ = try await store.updateSchemaText(container: "iCloud.com.example.Cloudy", environment: "development") { _ in
            ("DEFINE SCHEMA\n", [backfill])
        }
        func sized(_ zone: ZoneKey, _ kind: String = "Items") async throws -> [String] {
            try await keys(
                store,
                IndexQuery(
                    zones: [zone], kind: kind, conditions: [IndexCondition(field: "size", .greaterThan(.integer(0)))],
                    sort: [IndexSort(field: "size")], limit: 10))
        }
        #expect(try await sized(lists) == ["milk", "mints"])
        #expect(try await sized(production) == [], "another environment's services are not backfilled")
        #expect(try await sized(lists, "Lists") == [], "nor another kind")
        // The rows belong to the version backfilled: replacing it drops them as it drops the others.
        try await saveItem(store, lists, "mints", name: "mints", number: 6, list: "groceries")
        #expect(try await sized(lists) == ["milk"])
    }

    @Test(arguments: StoreBackend.allCases)
    func aSchemaChangedInAZoneTransactionCommitsWithIt(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        let (container, environment) = ("iCloud.com.example.Cloudy", "development")
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "Example"))
        try await store.createContainer(Container(identifier: container, teamID: "98Z3R5XU29"))
        struct Refused: Error {
            var seen: String?
        }
        let refused = await #expect(throws: Refused.self) {
            _ = try await store.transactRecords(zone, creating: true) { transaction in
                try transaction.put("a", payload: Data("x".utf8), size: 1)
                try transaction.setSchemaText("RECORD TYPE Lost", container: container, environment: environment)
                throw Refused(seen: try transaction.schemaText(container: container, environment: environment))
            }
        }
        #expect(refused?.seen == "RECORD TYPE Lost")
        #expect(try await store.schemaText(container: container, environment: environment) == nil)
        let before = try await store.transactRecords(zone, creating: true) { transaction in
            let before = try transaction.schemaText(container: container, environment: environment)
            try transaction.put("a", payload: Data("x".utf8), size: 1)
            try transaction.setSchemaText("RECORD TYPE Kept", container: container, environment: environment)
            return before
        }.result
        #expect(before == nil)
        #expect(try await store.schemaText(container: container, environment: environment) == "RECORD TYPE Kept")
        #expect(try await store.schemaText(container: container, environment: "production") == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func aScanFindsLivePayloadsWithTheMarkerInTheServicesZones(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        let other = ZoneKey(accountID: zone.accountID, address: ZoneAddress(service: .keyValue, name: "Lists"))
        _ = try await store.transact(zone, creating: true) { transaction in
            try transaction.put("a", payload: Data("photo ASSETID 1".utf8), size: 1)
            try transaction.put("b", payload: Data("plain".utf8), size: 1)
            try transaction.put("c", payload: Data("photo ASSETID 3".utf8), size: 1)
            try transaction.put("c", payload: nil, size: 0)
        }
        _ = try await store.transact(other, creating: true) { transaction in
            try transaction.put("d", payload: Data("photo ASSETID 4".utf8), size: 1)
        }
        let found = try await store.scanLivePayloads(of: .records, containing: Data("ASSETID".utf8)) { payload in
            [String(decoding: payload, as: UTF8.self)]
        }
        #expect(found == ["photo ASSETID 1"])
    }

    @Test(arguments: StoreBackend.allCases)
    func anEntryIsIndexedAsItsCurrentVersionWhateverWasPutSince(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        _ = try await store.transact(zone, creating: true) { transaction in
            try transaction.put("a", payload: Data("a".utf8), size: 1)
            try transaction.put("b", payload: Data("b".utf8), size: 1)
            try transaction.index("a", kind: "Items", rows: [IndexEntry(field: "name", value: .text("first"))])
            try transaction.index(
                "b", kind: "Items",
                rows: [
                    IndexEntry(field: "name", value: .text("second")), IndexEntry(field: "code", value: .text("naïve ☕️")),
                    IndexEntry(field: "ratio", value: .real(0.25)),
                    IndexEntry(field: "at", value: .point(latitude: 1.5, longitude: -2)),
                ])
            try transaction.put("c", payload: Data("c".utf8), size: 1)
            try transaction.put("c", payload: nil, size: 0)
            #expect(throws: StoreError.self) { try transaction.index("c", kind: "Items", rows: []) }
        }
        for (name, key) in [("first", "a"), ("second", "b")] {
            let query = IndexQuery(
                zones: [zone], kind: "Items", conditions: [IndexCondition(field: "name", .equal(.text(name)))], limit: 10)
            #expect(try await keys(store, query) == [key])
        }
        // Every kind of value is stored whole: text beyond ASCII, reals, points.
        for condition in [
            IndexCondition(field: "code", .equal(.text("naïve ☕️"))), IndexCondition(field: "ratio", .equal(.real(0.25))),
            IndexCondition(field: "at", .within(meters: 10, latitude: 1.5, longitude: -2)),
        ] {
            #expect(try await keys(store, IndexQuery(zones: [zone], kind: "Items", conditions: [condition], limit: 10)) == ["b"])
        }
        let prefix = IndexQuery(
            zones: [zone], kind: "Items", conditions: [IndexCondition(field: "code", .equal(.text("naïve")))], limit: 10)
        #expect(try await keys(store, prefix).isEmpty, "equality is on the whole text")
    }

    /// Queries of more shapes than a connection keeps prepared (`IN` lists of every length up to past the
    /// bound) answer as those it keeps do, and asking again, now prepared, answers the same.
    @Test(arguments: StoreBackend.allCases)
    func queriesOfManyShapesAnswerAlike(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        for number in 1...3 {
            try await saveItem(store, zone, "\(number)", name: "item \(number)", number: Int64(number), list: "groceries")
        }
        let lengths = 1...(SQLiteStore.maxPreparedQueryTexts + 20)
        for _ in 0..<2 {
            for length in lengths {
                // 2, then 2 and 3, … with numbers no item has after them.
                let wanted = (0..<length).map { IndexValue.integer(Int64($0 + 2)) }
                let query = IndexQuery(
                    zones: [zone], kind: "Items", conditions: [IndexCondition(field: "number", .oneOf(wanted))], limit: 10)
                #expect(try await keys(store, query) == (length == 1 ? ["2"] : ["2", "3"]), "\(length) values")
            }
        }
    }
}
