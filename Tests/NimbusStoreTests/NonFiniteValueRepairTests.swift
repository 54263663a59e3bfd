import Foundation
import GRDB
import NimbusCore
@testable import NimbusStore
import NimbusTestingCore
import Testing

/// Records stored before numbers beyond a Double's range were refused held `"value":null` where a
/// DOUBLE was; opening such a database repairs them so every reader can decode them again.
@Suite(.cleansUp) struct NonFiniteValueRepairTests {
    static let records = "db:iCloud.com.example.Cloudy:development:public"

    /// A database as the release before the repair left it: two broken records, two sound ones that
    /// merely mention null, and a key-value entry.
    func databaseWithBrokenRecords() throws -> String {
        let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("nimbus.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try SQLiteStore.migrator.migrate(queue, upTo: "2026-11-22-index-rows-unchecked")
        let stamp =
            #""created":{"timestamp":1,"userRecordName":"_a","deviceID":"d"},"modified":{"timestamp":1,"userRecordName":"_a","deviceID":"d"}"#
        let payloads = [
            "broken": #"{"recordType":"T","fields":{"x":{"value":null,"type":"DOUBLE"},"name":{"value":"a","type":"STRING"}},"#
                + stamp + "}",
            "list": #"{"recordType":"T","fields":{"l":{"value":[1.5,null,2],"type":"DOUBLE_LIST"}},"# + stamp + "}",
            "sound": #"{"recordType":"T","fields":{"note":{"value":"null and void","type":"STRING"}},"# + stamp + "}",
        ]
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO zones (id, account_id, service, name, sequence, live_entries, live_bytes) VALUES
                        (1, '_public', ?, '_defaultZone', 3, 3, ?), (2, '_ann', 'kv', 'T.com.x', 1, 1, 4);
                    INSERT INTO entries (zone_id, key, payload, size, sequence) VALUES (2, 'k', ?, 4, 1);
                    INSERT INTO entry_index (zone_id, sequence, field, position, value, longitude) VALUES
                        (1, 1, 11, 0, 9e999, NULL), (1, 2, 12, 1, -9e999, NULL), (1, 2, 12, 0, 1.5, NULL);
                    """,
                arguments: [
                    Self.records, payloads.values.map(\.utf8.count).reduce(0, +), Data(#"{"type":"STRING","value":null}"#.utf8),
                ])
            for (sequence, key) in ["broken", "list", "sound"].enumerated() {
                try db.execute(
                    sql: "INSERT INTO entries (zone_id, key, payload, size, sequence) VALUES (1, ?, ?, ?, ?)",
                    arguments: [key, Data(payloads[key]!.utf8), payloads[key]!.utf8.count, sequence + 1])
            }
        }
        return path
    }

    @Test func brokenValuesAreRemovedAndTheRestKept() async throws {
        let store = try SQLiteStore(path: try databaseWithBrokenRecords())
        let zone = ZoneKey(
            accountID: "_public",
            address: ZoneAddress(service: try #require(ZoneAddress.Service(encoded: Self.records)), name: "_defaultZone"))
        let entries = Dictionary(
            uniqueKeysWithValues: try await store.entries(zone, keys: ["broken", "list", "sound"]).map { ($0.key, $0) })
        func fields(_ key: String) throws -> JSONTree? { try JSONTree(parsing: try #require(entries[key]?.payload))["fields"] }
        #expect(try fields("broken") == .object([("name", .object([("value", .string("a")), ("type", .string("STRING"))]))]))
        #expect(try fields("list")?["l"]?["value"] == .array([.number("1.5"), .number("2")]))
        #expect(
            try fields("sound")?["note"]?["value"] == .string("null and void"), "a record that only mentions null is untouched")
        #expect(entries.values.map(\.sequence).sorted() == [1, 2, 3], "change tags stay")

        let (sizes, liveBytes, indexRows, keyValue) = try await store.pool.read { db in
            (
                try Int.fetchAll(db, sql: "SELECT size FROM entries WHERE zone_id = 1 ORDER BY sequence"),
                try Int.fetchOne(db, sql: "SELECT live_bytes FROM zones WHERE id = 1"),
                try Double.fetchAll(db, sql: "SELECT value FROM entry_index ORDER BY sequence, position"),
                try Data.fetchOne(db, sql: "SELECT payload FROM entries WHERE zone_id = 2")
            )
        }
        #expect(sizes == ["broken", "list", "sound"].map { entries[$0]!.payload!.count })
        #expect(liveBytes == sizes.reduce(0, +))
        #expect(indexRows == [1.5], "the index rows of infinite values are gone, the others stay")
        #expect(keyValue == Data(#"{"type":"STRING","value":null}"#.utf8), "only record databases are repaired")
    }
}
