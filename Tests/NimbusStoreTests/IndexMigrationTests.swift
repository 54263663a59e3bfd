import Foundation
import GRDB
import NimbusCore
@testable import NimbusStore
import NimbusTestingCore
import Testing

/// A database written before index rows named their fields by id still answers every query after the
/// migration, and writes over its entries replace their old rows.
@Suite(.cleansUp) struct IndexMigrationTests {
    static let service = ZoneAddress.Service.records(
        container: "iCloud.com.example.Cloudy", environment: "development", database: "private")
    /// The zone `databaseWithTextFieldNames` writes.
    let zone = ZoneKey(accountID: "_ann", address: ZoneAddress(service: Self.service, name: "Lists"))

    /// A database as the release before field ids left it: three items and a list in one zone.
    func databaseWithTextFieldNames() throws -> String {
        let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("nimbus.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try SQLiteStore.migrator.migrate(queue, upTo: "2026-11-22-role-members")
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO accounts (id, email, password_hash, created_at) VALUES ('_ann', 'ann@example.com', 'x', 0);
                    INSERT INTO zones (id, account_id, service, name, sequence, live_entries, live_bytes)
                        VALUES (7, '_ann', ?, 'Lists', 4, 4, 4);
                    INSERT INTO entries (zone_id, key, payload, size, sequence) VALUES
                        (7, 'milk', x'31', 1, 1), (7, 'bread', x'32', 1, 2), (7, 'nails', x'33', 1, 3), (7, 'groceries', x'34', 1, 4);
                    INSERT INTO entry_index (zone_id, sequence, field, position, kind, value, longitude) VALUES
                        (7, 1, '', 0, 'Items', 'milk', NULL), (7, 1, 'name', 0, 'Items', 'milk', NULL),
                        (7, 1, 'list', 0, 'Items', 'groceries', NULL), (7, 1, 'number', 0, 'Items', 3, NULL),
                        (7, 1, 'tags', 0, 'Items', 'dairy', NULL), (7, 1, 'tags', 1, 'Items', 'cold', NULL),
                        (7, 1, 'location', 0, 'Items', 52.52, 13.405),
                        (7, 1, 'tokens:name', 0, 'Items', 'milk', NULL), (7, 1, 'tokens:allTokens', 0, 'Items', 'milk', NULL),
                        (7, 2, '', 0, 'Items', 'bread', NULL), (7, 2, 'name', 0, 'Items', 'bread', NULL),
                        (7, 2, 'list', 0, 'Items', 'groceries', NULL), (7, 2, 'number', 0, 'Items', 1, NULL),
                        (7, 3, '', 0, 'Items', 'nails', NULL), (7, 3, 'name', 0, 'Items', 'nails', NULL),
                        (7, 3, 'list', 0, 'Items', 'hardware', NULL), (7, 3, 'number', 0, 'Items', 2, NULL),
                        (7, 4, '', 0, 'Lists', 'groceries', NULL), (7, 4, 'name', 0, 'Lists', 'groceries', NULL);
                    """,
                arguments: [Self.service.encoded])
        }
        return path
    }

    @Test func queriesFindTheRowsWrittenBeforeTheMigration() async throws {
        let store = try SQLiteStore(path: try databaseWithTextFieldNames())
        func keys(_ conditions: [IndexCondition], sort: [IndexSort] = [], kind: String = "Items") async throws -> [String] {
            try await store.query(IndexQuery(zones: [zone], kind: kind, conditions: conditions, sort: sort, limit: 10)).map(
                \.entry.key)
        }
        let groceries = IndexCondition(field: "list", .equal(.text("groceries")))
        #expect(try await keys([groceries], sort: [IndexSort(field: "name")]) == ["bread", "milk"])
        #expect(try await keys([], sort: [IndexSort(field: "number", ascending: false)]) == ["milk", "nails", "bread"])
        #expect(try await keys([IndexCondition(field: "tags", .allOf([.text("cold"), .text("dairy")]))]) == ["milk"])
        #expect(
            try await keys([IndexCondition(field: "location", .within(meters: 1_000, latitude: 52.52, longitude: 13.4))]) == [
                "milk"
            ])
        #expect(try await keys([IndexCondition(field: IndexEntry.keyField, .prefix("n"))]) == ["nails"])
        #expect(try await keys([IndexCondition(field: "name", .equal(.text("groceries")))], kind: "Lists") == ["groceries"])
        #expect(try await keys([groceries], kind: "Lists") == [], "a field of one kind is not the same-named field of another")

        // Rewriting an entry drops its rows from before the migration.
        _ = try await store.transact(zone, creating: false) { transaction in
            try transaction.put("milk", payload: Data("5".utf8), size: 1)
            try transaction.index("milk", kind: "Items", rows: [IndexEntry(field: "list", value: .text("dairy"))])
        }
        #expect(try await keys([groceries]) == ["bread"])
        #expect(try await keys([IndexCondition(field: "list", .equal(.text("dairy")))]) == ["milk"])
        #expect(try await keys([IndexCondition(field: "tags", .equal(.text("cold")))]) == [])
    }

    /// The record service's index of all words together repeated each text field's words; its rows go,
    /// and the words stay searchable through their fields.
    @Test func theIndexOfAllWordsTogetherIsDropped() async throws {
        let store = try SQLiteStore(path: try databaseWithTextFieldNames())
        let left = try await store.pool.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT count(*) FROM index_fields WHERE field = 'tokens:allTokens')
                        + (SELECT count(*) FROM entry_index WHERE field = ?)
                    """,
                arguments: [IndexFieldID.of(kind: "Items", field: "tokens:allTokens")])
        }
        #expect(left == 0)
        let words = IndexCondition(anyOf: ["tokens:note", "tokens:name"], .equal(.text("milk")))
        let found = try await store.query(IndexQuery(zones: [zone], kind: "Items", conditions: [words], limit: 10))
        #expect(found.map(\.entry.key) == ["milk"])
    }

    /// Zones written before services were stored by their parts are found by their parts after it.
    @Test func zonesWrittenBeforeAreFoundByTheirServicesParts() async throws {
        let store = try SQLiteStore(path: try databaseWithTextFieldNames())
        let found = try await store.scanLivePayloads(of: .records, containing: Data("1".utf8)) {
            [String(decoding: $0, as: UTF8.self)]
        }
        #expect(found == ["1"])
        let parts = try await store.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT kind, container, environment FROM zones WHERE id = 7").map {
                [$0["kind"] as String?, $0["container"], $0["environment"]]
            }
        }
        #expect(parts == ["db", "iCloud.com.example.Cloudy", "development"])
    }

    @Test func openingReportsTheMigrationsItAppliesAndEmptiesTheLog() throws {
        let path = try databaseWithTextFieldNames()
        var reported = [[String]]()
        var rewrites = [Bool]()
        let store = try SQLiteStore(path: path) {
            reported.append($0)
            rewrites.append($1)
        }
        // Every migration after the one the database was left at, in order; some of them rewrite rows.
        #expect(reported == [Array(SQLiteStore.migrator.migrations.drop { $0 != "2026-11-22-index-field-ids" })])
        #expect(rewrites == [true])
        let log = try FileManager.default.attributesOfItem(atPath: path + "-wal")
        #expect(log[.size] as? Int == 0)
        withExtendedLifetime(store) {}
        _ = try SQLiteStore(path: path) { pending, _ in reported.append(pending) }
        #expect(reported.count == 1, "an up-to-date database has nothing to report")
        let freshDirectory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: freshDirectory, withIntermediateDirectories: true)
        let fresh = freshDirectory.appendingPathComponent("nimbus.sqlite").path
        _ = try SQLiteStore(path: fresh) { pending, _ in reported.append(pending) }
        #expect(reported.count == 1, "creating a database is no migration to warn about")
    }

    @Test func everyIndexedFieldIsNamedInTheDictionary() async throws {
        let path = try databaseWithTextFieldNames()
        let store = try SQLiteStore(path: path)
        _ = try await store.transact(zone, creating: false) { transaction in
            try transaction.put("screws", payload: Data("6".utf8), size: 1)
            try transaction.index("screws", kind: "Items", rows: [IndexEntry(field: "size", value: .integer(4))])
        }
        let unnamed = try await store.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM entry_index WHERE field NOT IN (SELECT id FROM index_fields)")
        }
        #expect(unnamed == 0)
        let names = try await store.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, kind, field FROM index_fields ORDER BY kind, field").map {
                ($0["id"] as Int64, $0["kind"] as String, $0["field"] as String)
            }
        }
        #expect(
            names.map { "\($0.1).\($0.2)" } == [
                "Items.", "Items.list", "Items.location", "Items.name", "Items.number", "Items.size", "Items.tags",
                "Items.tokens:name",
                "Lists.", "Lists.name",
            ])
        #expect(names.allSatisfy { IndexFieldID.of(kind: $0.1, field: $0.2) == $0.0 })
    }

    /// Two names sharing an id (63 bits of SHA-256) would mix their rows; the write is refused instead.
    @Test func aFieldWhoseIdNamesAnotherFieldIsRefused() async throws {
        let path = try databaseWithTextFieldNames()
        let store = try SQLiteStore(path: path)
        try await store.pool.write { db in
            try db.execute(
                sql: "INSERT INTO index_fields (id, kind, field) VALUES (?, 'Items', 'colliding')",
                arguments: [IndexFieldID.of(kind: "Items", field: "weight")])
        }
        await #expect(throws: StoreError.self) {
            _ = try await store.transact(zone, creating: false) { transaction in
                try transaction.put("anvil", payload: Data("7".utf8), size: 1)
                try transaction.index("anvil", kind: "Items", rows: [IndexEntry(field: "weight", value: .integer(50))])
            }
        }
        #expect(try await store.entries(zone, keys: ["anvil"]).isEmpty)
    }
}
