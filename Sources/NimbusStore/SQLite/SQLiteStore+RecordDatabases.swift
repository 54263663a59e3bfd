import Foundation
import GRDB
import NimbusCore

extension SQLiteStore: RecordDatabaseStore {
    package func transactRecords<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, _ body: @escaping @Sendable (any RecordZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState) {
        try await transactSQLite(zone, creating: creating, body)
    }

    package func schemaText(container: String, environment: String) async throws -> String? {
        try await read { db in try Self.schemaText(db, container: container, environment: environment) }
    }

    package func updateSchemaText(
        container: String, environment: String,
        _ update: @escaping @Sendable (String?) throws -> (text: String, backfills: [IndexBackfill])
    ) async throws -> String {
        // The schema and the backfills still to do commit together; the backfills then run in short
        // transactions of their own, which other writes interleave with.
        let (text, jobs) = try await groupCommit.commit { db in
            let (text, backfills) = try update(try Self.schemaText(db, container: container, environment: environment))
            try Self.setSchemaText(db, text, container: container, environment: environment)
            var jobs = [(id: Int64, backfill: IndexBackfill)]()
            for backfill in backfills {
                try db.cachedStatement(sql: "INSERT INTO index_backfills (container, environment, kind) VALUES (?, ?, ?)")
                    .execute(arguments: [backfill.container, backfill.environment, backfill.kind])
                jobs.append((db.lastInsertedRowID, backfill))
            }
            return (text, jobs)
        }
        for job in jobs { try await runBackfill(job.id, rows: job.backfill.rows) }
        return text
    }

    package func recordHistory(_ zone: ZoneKey, key: String) async throws -> [RecordVersionNote] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT h.sequence, h.note FROM record_history h JOIN zones z ON z.id = h.zone_id
                    WHERE z.account_id = ? AND z.service = ? AND z.name = ? AND h.key = ? ORDER BY h.sequence DESC
                    """,
                arguments: [zone.accountID, zone.address.service.encoded, zone.address.name, key]
            ).map { RecordVersionNote(sequence: $0["sequence"], note: $0["note"]) }
        }
    }

    package func pendingBackfills() async throws -> [PendingBackfill] {
        try await read { db in
            let zones = "FROM zones z WHERE z.kind = ? AND z.container = b.container AND z.environment = b.environment"
            let passed =
                "CASE WHEN z.id < b.zone_id THEN z.live_entries WHEN z.id = b.zone_id AND z.sequence > 0 "
                + "THEN z.live_entries * min(1.0, b.sequence * 1.0 / z.sequence) ELSE 0 END"
            let kind = ZoneAddress.Service.Kind.records.rawValue
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT b.id, b.container, b.environment, b.kind,
                        (SELECT total(\(passed)) \(zones)) AS passed, (SELECT total(z.live_entries) \(zones)) AS total
                    FROM index_backfills b ORDER BY b.id
                    """, arguments: [kind, kind]
            ).map {
                let (passed, total): (Double, Double) = ($0["passed"], $0["total"])
                return PendingBackfill(
                    id: $0["id"], container: $0["container"], environment: $0["environment"], kind: $0["kind"],
                    progress: total > 0 ? min(1, passed / total) : 0)
            }
        }
    }

    package func runBackfill(_ id: Int64, rows: @escaping @Sendable (_ payload: Data) throws -> [IndexEntry]) async throws {
        while try await groupCommit.commit(.background, { db in try Self.backfillStep(id, rows: rows, db) }) {
            try Task.checkCancellation()
            await Task.yield()
        }
    }

    /// How long one step of a long job (a backfill, a zone's purge) may hold the writer.
    static let stepBudget: Duration = .milliseconds(2)

    /// Adds the backfill's rows to the current versions of live entries of its kind (found by the kind's row
    /// of the entry's key, which every indexed entry has), zone by zone in id order and by sequence within
    /// one, from where the last step stopped, for `stepBudget`. Whether there is more to do.
    private static func backfillStep(_ id: Int64, rows: (Data) throws -> [IndexEntry], _ db: Database) throws -> Bool {
        guard
            let job = try Row.fetchOne(
                db, sql: "SELECT container, environment, kind, zone_id, sequence FROM index_backfills WHERE id = ?",
                arguments: [id])
        else { return false }
        let kind: String = job["kind"]
        var (zone, sequence): (Int64, Int64) = (job["zone_id"], job["sequence"])
        let keyField = IndexFieldID.of(kind: kind, field: IndexEntry.keyField)
        let nextZone = try db.cachedStatement(
            sql: "SELECT id FROM zones WHERE kind = ? AND container = ? AND environment = ? AND id > ? ORDER BY id LIMIT 1")
        let versions = try db.cachedStatement(
            sql: "SELECT sequence FROM entry_index WHERE zone_id = ? AND sequence > ? AND field = ? ORDER BY sequence LIMIT 64")
        let payload = try db.cachedStatement(
            sql: "SELECT payload FROM entries WHERE zone_id = ? AND sequence = ? AND payload IS NOT NULL")
        let insert = try db.cachedStatement(
            sql:
                "INSERT OR IGNORE INTO entry_index (zone_id, sequence, field, position, value, longitude) VALUES (?, ?, ?, ?, ?, ?)"
        )
        var registered = Set<String>()
        let deadline = ContinuousClock.now + stepBudget
        while ContinuousClock.now < deadline {
            let found = try Int64.fetchAll(versions, arguments: [zone, sequence, keyField])
            guard let last = found.last else {
                guard
                    let next = try Int64.fetchOne(
                        nextZone,
                        arguments: [
                            ZoneAddress.Service.Kind.records.rawValue, job["container"] as String, job["environment"] as String,
                            zone,
                        ])
                else {
                    try db.execute(sql: "DELETE FROM index_backfills WHERE id = ?", arguments: [id])
                    return false
                }
                (zone, sequence) = (next, 0)
                continue
            }
            for version in found {
                guard let data = try Data.fetchOne(payload, arguments: [zone, version]) else { continue }
                for row in try rows(data) {
                    let field = IndexFieldID.of(kind: kind, field: row.field)
                    if registered.insert(row.field).inserted {
                        try IndexFieldID.register(field, kind: kind, field: row.field, db)
                    }
                    let (value, longitude) = columns(row.value)
                    try insert.execute(arguments: [zone, version, field, row.position, value, longitude])
                }
            }
            sequence = last
        }
        try db.execute(sql: "UPDATE index_backfills SET zone_id = ?, sequence = ? WHERE id = ?", arguments: [zone, sequence, id])
        return true
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
