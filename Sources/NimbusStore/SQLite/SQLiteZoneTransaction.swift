import Foundation
import GRDB
import GRDBSQLite

/// A zone transaction on SQLite: statements run on the writer connection inside GRDB's transaction.
final class SQLiteZoneTransaction: RecordZoneTransaction {
    private let db: Database
    private(set) var state: ZoneState
    /// The entry the last `put` wrote live, so indexing it right after needs no lookup.
    private var lastLive: (key: String, sequence: Int64)?
    /// The version the last `entry` read (nil: none stored), so putting that entry right after needs no
    /// second lookup; any write forgets it.
    private var lastRead: (key: String, version: Version?)?
    /// The ids of the fields this transaction has indexed under, by kind, registered in `index_fields`.
    /// Looked up by kind once per entry and by field once per row: hashing both names for every row cost
    /// ~2% of a batch's commit.
    private var fieldIDs = [String: [String: Int64]]()

    init(_ db: Database, state: ZoneState) {
        self.db = db
        self.state = state
    }

    // The statements a batch runs per entry (five index rows or more each) bind and read through SQLite's
    // API: GRDB's argument arrays and rows cost about as much as the statements themselves.

    func entry(_ key: String) throws -> Entry? {
        let select = try db.cachedStatement(
            sql: "SELECT payload, size, sequence, audience FROM entries WHERE zone_id = ? AND key = ?")
        let handle = select.sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_int64(handle, 1, state.id)
        Self.bind(key, at: 2, handle)
        defer { sqlite3_reset(handle) }
        switch sqlite3_step(handle) {
        case SQLITE_ROW:
            let payload = sqlite3_column_type(handle, 0) == SQLITE_NULL ? nil : Self.data(column: 0, handle)
            let sequence = sqlite3_column_int64(handle, 2)
            lastRead = (key, Version(live: payload != nil, size: Int(sqlite3_column_int64(handle, 1)), sequence: sequence))
            let audience = sqlite3_column_type(handle, 3) == SQLITE_NULL ? nil : String(cString: sqlite3_column_text(handle, 3))
            return Entry(key: key, payload: payload, sequence: sequence, audience: audience)
        case SQLITE_DONE:
            lastRead = (key, nil)
            return nil
        case let code:
            throw error(code, select)
        }
    }

    /// The stored version of an entry: what replacing it takes away.
    private struct Version {
        var live: Bool
        var size: Int
        var sequence: Int64
    }

    private func version(_ key: String) throws -> Version? {
        if let lastRead, lastRead.key == key { return lastRead.version }
        return try Row.fetchOne(
            try db.cachedStatement(
                sql: "SELECT payload IS NOT NULL AS live, size, sequence FROM entries WHERE zone_id = ? AND key = ?"),
            arguments: [state.id, key]
        ).map { Version(live: $0["live"], size: $0["size"], sequence: $0["sequence"]) }
    }

    func put(_ key: String, payload: Data?, size: Int, audience: String?) throws -> Int64 {
        if let previous = try version(key) {
            if previous.live {
                state.liveEntries -= 1
                state.liveBytes -= previous.size
            }
            // The previous version's index rows go with it; the caller indexes the new version.
            try db.cachedStatement(sql: "DELETE FROM entry_index WHERE zone_id = ? AND sequence = ?").execute(
                arguments: [state.id, previous.sequence])
        }
        if payload != nil {
            state.liveEntries += 1
            state.liveBytes += size
        }
        state.sequence += 1
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO entries (zone_id, key, payload, size, sequence, audience) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (zone_id, key) DO UPDATE
                SET payload = excluded.payload, size = excluded.size, sequence = excluded.sequence, audience = excluded.audience
                """)
        let handle = upsert.sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_int64(handle, 1, state.id)
        Self.bind(key, at: 2, handle)
        if let payload {
            _ = payload.withUnsafeBytes { sqlite3_bind_blob(handle, 3, $0.baseAddress, Int32($0.count), Self.transient) }
            sqlite3_bind_int64(handle, 4, Int64(size))
        } else {
            sqlite3_bind_null(handle, 3)
            sqlite3_bind_int64(handle, 4, 0)
        }
        sqlite3_bind_int64(handle, 5, state.sequence)
        if let audience { Self.bind(audience, at: 6, handle) } else { sqlite3_bind_null(handle, 6) }
        try step(upsert)
        lastLive = payload == nil ? nil : (key, state.sequence)
        lastRead = nil
        return state.sequence
    }

    func index(_ key: String, kind: String, rows: [IndexEntry]) throws {
        let sequence: Int64
        if let lastLive, lastLive.key == key {
            sequence = lastLive.sequence
        } else {
            guard
                let found = try Int64.fetchOne(
                    try db.cachedStatement(
                        sql: "SELECT sequence FROM entries WHERE zone_id = ? AND key = ? AND payload IS NOT NULL"),
                    arguments: [state.id, key])
            else { throw StoreError.missing("entry \(key)") }
            sequence = found
        }
        let insert = try db.cachedStatement(
            sql: "INSERT INTO entry_index (zone_id, sequence, field, position, value, longitude) VALUES (?, ?, ?, ?, ?, ?)")
        let rows = [IndexEntry(field: IndexEntry.keyField, value: .text(key))] + rows
        var ids = fieldIDs.removeValue(forKey: kind) ?? [:]
        defer { fieldIDs[kind] = ids }
        for row in rows {
            let handle = insert.sqliteStatement
            sqlite3_reset(handle)
            sqlite3_bind_int64(handle, 1, state.id)
            sqlite3_bind_int64(handle, 2, sequence)
            sqlite3_bind_int64(handle, 3, try ids[row.field] ?? register(kind: kind, field: row.field, in: &ids))
            sqlite3_bind_int64(handle, 4, Int64(row.position))
            switch row.value {
            case .integer(let integer):
                sqlite3_bind_int64(handle, 5, integer)
                sqlite3_bind_null(handle, 6)
            case .real(let real):
                sqlite3_bind_double(handle, 5, real)
                sqlite3_bind_null(handle, 6)
            case .text(let text):
                Self.bind(text, at: 5, handle)
                sqlite3_bind_null(handle, 6)
            case .point(let latitude, let longitude):
                sqlite3_bind_double(handle, 5, latitude)
                sqlite3_bind_double(handle, 6, longitude)
            }
            try step(insert)
        }
    }

    /// Runs a bound statement that returns no rows, and resets it.
    private func step(_ statement: Statement) throws {
        let code = sqlite3_step(statement.sqliteStatement)
        sqlite3_reset(statement.sqliteStatement)
        guard code == SQLITE_DONE else { throw error(code, statement) }
    }

    private func error(_ code: Int32, _ statement: Statement) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
            sql: statement.sql)
    }

    /// The id of (kind, field), registered in this transaction the first time it indexes under it, so
    /// the names an index row refers to are committed with it.
    private func register(kind: String, field: String, in ids: inout [String: Int64]) throws -> Int64 {
        let id = IndexFieldID.of(kind: kind, field: field)
        try IndexFieldID.register(id, kind: kind, field: field, db)
        ids[field] = id
        return id
    }

    /// Binds text, which SQLite copies (the Swift string's bytes live only for the call). Like GRDB, which
    /// binds the values queries compare with, it lets SQLite measure the text (up to a NUL).
    private static func bind(_ text: String, at index: Int32, _ handle: OpaquePointer) {
        _ = text.withCString { sqlite3_bind_text(handle, index, $0, -1, transient) }
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private static func data(column: Int32, _ handle: OpaquePointer) -> Data {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    func schemaText(container: String, environment: String) throws -> String? {
        try SQLiteStore.schemaText(db, container: container, environment: environment)
    }

    func setSchemaText(_ text: String, container: String, environment: String) throws {
        try SQLiteStore.setSchemaText(db, text, container: container, environment: environment)
    }

    func noteVersion(_ key: String, note: Data, first: Bool) throws {
        let sequence: Int64
        if let lastLive, lastLive.key == key {
            sequence = lastLive.sequence
        } else {
            guard
                let found = try Int64.fetchOne(
                    try db.cachedStatement(sql: "SELECT sequence FROM entries WHERE zone_id = ? AND key = ?"),
                    arguments: [state.id, key])
            else { throw StoreError.missing("entry \(key)") }
            sequence = found
        }
        let insert = try db.cachedStatement(sql: "INSERT INTO record_history (zone_id, key, sequence, note) VALUES (?, ?, ?, ?)")
        let handle = insert.sqliteStatement
        sqlite3_reset(handle)
        sqlite3_bind_int64(handle, 1, state.id)
        Self.bind(key, at: 2, handle)
        sqlite3_bind_int64(handle, 3, sequence)
        _ = note.withUnsafeBytes { sqlite3_bind_blob(handle, 4, $0.baseAddress, Int32($0.count), Self.transient) }
        try step(insert)
        guard !first else { return }
        // Those beyond the kept ones go: usually one row, found from the newest down the key's rows.
        try db.cachedStatement(
            sql: """
                DELETE FROM record_history WHERE zone_id = ?1 AND key = ?2 AND sequence <= (
                    SELECT sequence FROM record_history WHERE zone_id = ?1 AND key = ?2 ORDER BY sequence DESC LIMIT 1 OFFSET ?3)
                """
        ).execute(arguments: [state.id, key, RecordVersionNote.kept])
    }

    func forgetHistory(_ key: String) throws {
        try db.cachedStatement(sql: "DELETE FROM record_history WHERE zone_id = ? AND key = ?").execute(arguments: [
            state.id, key,
        ])
    }

    func ownerBytes() throws -> Int {
        let others =
            try Int.fetchOne(
                try db.cachedStatement(
                    sql: """
                        SELECT coalesce(sum(live_bytes), 0) FROM zones
                        WHERE account_id = (SELECT account_id FROM zones WHERE id = ?) AND id != ?
                        """),
                arguments: [state.id, state.id]) ?? 0
        return others + state.liveBytes
    }

    func setGrants(_ grants: [ZoneGrant], scope: String) throws {
        let accepted = Set(
            try String.fetchAll(
                try db.cachedStatement(sql: "SELECT grantee FROM zone_grants WHERE zone_id = ? AND scope = ? AND accepted = 1"),
                arguments: [state.id, scope]))
        try db.cachedStatement(sql: "DELETE FROM zone_grants WHERE zone_id = ? AND scope = ?").execute(arguments: [
            state.id, scope,
        ])
        let insert = try db.cachedStatement(
            sql: "INSERT INTO zone_grants (zone_id, scope, grantee, permission, accepted) VALUES (?, ?, ?, ?, ?)")
        for grant in grants {
            try insert.execute(
                arguments: [
                    state.id, scope, grant.grantee, grant.permission.rawValue, grant.accepted || accepted.contains(grant.grantee),
                ])
        }
    }

    func keys(kind: String, field: String, value: IndexValue) throws -> [String] {
        // CROSS JOIN keeps SQLite to this order: left to choose, it walked every entry of the zone and
        // probed the index for each (a document save cost a scan of the container).
        try String.fetchAll(
            try db.cachedStatement(
                sql: """
                    SELECT DISTINCT e.key FROM entry_index i CROSS JOIN entries e ON e.zone_id = i.zone_id AND e.sequence = i.sequence
                    WHERE i.zone_id = ? AND i.field = ? AND i.value = ?
                    """),
            arguments: [state.id, IndexFieldID.of(kind: kind, field: field), SQLiteStore.columns(value).value])
    }
}
