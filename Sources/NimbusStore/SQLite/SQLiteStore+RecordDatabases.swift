import Foundation
import GRDB
import NimbusCore

extension SQLiteStore: RecordDatabaseStore {
    package func transactRecords<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, _ body: @escaping @Sendable (any RecordZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState) {
        try await transactSQLite(zone, creating: creating, body)
    }

    package func scanLiveRecords<T: Sendable>(containing marker: Data, _ extract: @Sendable (Data) throws -> [T]) async throws
        -> [T]
    {
        try await read { db in
            let payloads = try Data.fetchCursor(
                db,
                sql: """
                    SELECT e.payload FROM entries e JOIN zones z ON z.id = e.zone_id
                    WHERE z.kind = ? AND e.payload IS NOT NULL AND instr(e.payload, ?) > 0
                    """,
                arguments: [ZoneAddress.Service.Kind.records.rawValue, marker])
            var found = [T]()
            while let payload = try payloads.next() { found += try extract(payload) }
            return found
        }
    }

    package func schemaText(container: String, environment: String) async throws -> String? {
        try await read { db in try Self.schemaText(db, container: container, environment: environment) }
    }

    package func updateSchemaText(
        container: String, environment: String,
        _ update: @escaping @Sendable (String?) throws -> (text: String, backfills: [IndexBackfill])
    ) async throws -> String {
        try await write { db in
            let (text, backfills) = try update(try Self.schemaText(db, container: container, environment: environment))
            try Self.setSchemaText(db, text, container: container, environment: environment)
            for backfill in backfills { try Self.apply(backfill, db) }
            return text
        }
    }

    /// Adds a backfill's rows to the current version of each live entry of its kind (found by the kind's
    /// row of the entry's key, which every indexed entry has). The versions are listed before any row is
    /// written, as two integers each, so a zone of millions of records stays a few megabytes.
    private static func apply(_ backfill: IndexBackfill, _ db: Database) throws {
        var versions = [(zone: Int64, sequence: Int64)]()
        let listed = try Row.fetchCursor(
            db,
            sql: """
                SELECT i.zone_id, i.sequence FROM zones z JOIN entry_index i ON i.zone_id = z.id AND i.field = ?
                WHERE z.kind = ? AND z.container = ? AND z.environment = ?
                """,
            arguments: [
                IndexFieldID.of(kind: backfill.kind, field: IndexEntry.keyField), ZoneAddress.Service.Kind.records.rawValue,
                backfill.container, backfill.environment,
            ])
        while let row = try listed.next() { versions.append((row[0], row[1])) }
        let payload = try db.cachedStatement(
            sql: "SELECT payload FROM entries WHERE zone_id = ? AND sequence = ? AND payload IS NOT NULL")
        let insert = try db.cachedStatement(
            sql:
                "INSERT OR IGNORE INTO entry_index (zone_id, sequence, field, position, value, longitude) VALUES (?, ?, ?, ?, ?, ?)"
        )
        var registered = Set<String>()
        for (zone, sequence) in versions {
            guard let data = try Data.fetchOne(payload, arguments: [zone, sequence]) else { continue }
            for row in try backfill.rows(data) {
                let field = IndexFieldID.of(kind: backfill.kind, field: row.field)
                if registered.insert(row.field).inserted {
                    try IndexFieldID.register(field, kind: backfill.kind, field: row.field, db)
                }
                let (value, longitude) = columns(row.value)
                try insert.execute(arguments: [zone, sequence, field, row.position, value, longitude])
            }
        }
    }

    static func schemaText(_ db: Database, container: String, environment: String) throws -> String? {
        try String.fetchOne(
            try db.cachedStatement(sql: "SELECT text FROM schemas WHERE container = ? AND environment = ?"),
            arguments: [container, environment])
    }

    static func setSchemaText(_ db: Database, _ text: String, container: String, environment: String) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO schemas (container, environment, text) VALUES (?, ?, ?)
                ON CONFLICT (container, environment) DO UPDATE SET text = excluded.text
                """
        ).execute(arguments: [container, environment, text])
    }
}
