import Foundation
import GRDB

/// A zone transaction on SQLite: statements run on the writer connection inside GRDB's transaction.
final class SQLiteZoneTransaction: ZoneTransaction {
    private let db: Database
    private(set) var state: ZoneState

    init(_ db: Database, state: ZoneState) {
        self.db = db
        self.state = state
    }

    func entry(_ key: String) throws -> Entry? {
        try Row.fetchOne(
            try db.cachedStatement(sql: "SELECT key, payload, sequence FROM entries WHERE zone_id = ? AND key = ?"),
            arguments: [state.id, key]
        ).map(SQLiteStore.entry)
    }

    func put(_ key: String, payload: Data?, size: Int) throws -> Int64 {
        let previous = try Row.fetchOne(
            try db.cachedStatement(sql: "SELECT payload IS NOT NULL AS live, size FROM entries WHERE zone_id = ? AND key = ?"),
            arguments: [state.id, key])
        if let previous, previous["live"] as Bool {
            state.liveEntries -= 1
            state.liveBytes -= previous["size"] as Int
        }
        if payload != nil {
            state.liveEntries += 1
            state.liveBytes += size
        }
        state.sequence += 1
        try db.cachedStatement(
            sql: """
                INSERT INTO entries (zone_id, key, payload, size, sequence) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (zone_id, key) DO UPDATE
                SET payload = excluded.payload, size = excluded.size, sequence = excluded.sequence
                """
        ).execute(arguments: [state.id, key, payload, payload == nil ? 0 : size, state.sequence])
        if payload == nil { try index(key, kind: "", rows: []) }
        return state.sequence
    }

    func index(_ key: String, kind: String, rows: [IndexEntry]) throws {
        try db.cachedStatement(sql: "DELETE FROM entry_index WHERE zone_id = ? AND key = ?").execute(arguments: [state.id, key])
        let insert = try db.cachedStatement(
            sql: "INSERT INTO entry_index (zone_id, key, field, position, kind, value, longitude) VALUES (?, ?, ?, ?, ?, ?, ?)")
        guard !rows.isEmpty else { return }
        try insert.execute(arguments: [state.id, key, "", 0, kind, kind, nil])
        for row in rows {
            let (value, longitude) = SQLiteStore.columns(row.value)
            try insert.execute(arguments: [state.id, key, row.field, row.position, kind, value, longitude])
        }
    }

    func keys(kind: String, field: String, value: IndexValue) throws -> [String] {
        try String.fetchAll(
            try db.cachedStatement(
                sql: "SELECT DISTINCT key FROM entry_index WHERE zone_id = ? AND kind = ? AND field = ? AND value = ?"),
            arguments: [state.id, kind, field, SQLiteStore.columns(value).value])
    }
}
