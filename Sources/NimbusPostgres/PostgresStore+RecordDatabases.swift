import Foundation
import NimbusCore
import NimbusStore
import PostgresNIO

extension PostgresStore: RecordDatabaseStore {
    package func transactRecords<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, _ body: @escaping @Sendable (any RecordZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState) {
        try await transactPostgres(zone, creating: creating, reading: [], body)
    }

    package func schemaText(container: String, environment: String) async throws -> String? {
        try await rows("SELECT text FROM schemas WHERE container = \(container) AND environment = \(environment)").value(
            String.self)
    }

    package func updateSchemaText(
        container: String, environment: String,
        _ update: @escaping @Sendable (String?) throws -> (text: String, backfills: [IndexBackfill])
    ) async throws -> String {
        // The schema and the backfills still to do commit together, the schema locked meanwhile (so
        // concurrent updates each see the other's result); the backfills then run in short transactions.
        let (text, jobs) = try await transaction { connection in
            let current = try await Self.schemaText(
                container: container, environment: environment, locking: true, connection)
            let (text, backfills) = try update(current)
            try await Self.setSchemaText(text, container: container, environment: environment, connection)
            var jobs = [(id: Int64, backfill: IndexBackfill)]()
            for backfill in backfills {
                let id = try await connection.run(
                    """
                    INSERT INTO index_backfills (container, environment, kind)
                    VALUES (\(backfill.container), \(backfill.environment), \(backfill.kind)) RETURNING id
                    """
                ).value(Int64.self)!
                jobs.append((id, backfill))
            }
            return (text, jobs)
        }
        for job in jobs { try await runBackfill(job.id, rows: job.backfill.rows) }
        return text
    }

    package func recordHistory(_ zone: ZoneKey, key: String) async throws -> [RecordVersionNote] {
        try await rows(
            """
            SELECT h.sequence, h.note FROM record_history h JOIN zones z ON z.id = h.zone_id
            WHERE z.account_id = \(zone.accountID) AND z.service = \(zone.address.service.encoded) AND z.name = \(zone.address.name)
            AND h.key = \(key) ORDER BY h.sequence DESC
            """
        ).map { row in
            let (sequence, note) = try row.decode((Int64, Data).self)
            return RecordVersionNote(sequence: sequence, note: note)
        }
    }

    package func pendingBackfills() async throws -> [PendingBackfill] {
        let kind = ZoneAddress.Service.Kind.records.rawValue
        return try await rows(
            """
            SELECT b.id, b.container, b.environment, b.kind,
                coalesce(sum(CASE WHEN z.id < b.zone_id THEN z.live_entries::float8
                    WHEN z.id = b.zone_id AND z.sequence > 0 THEN z.live_entries * least(1.0, b.sequence::float8 / z.sequence)
                    ELSE 0 END), 0)::float8,
                coalesce(sum(z.live_entries), 0)::float8
            FROM index_backfills b
            LEFT JOIN zones z ON z.kind = \(kind) AND z.container = b.container AND z.environment = b.environment
            GROUP BY b.id, b.container, b.environment, b.kind ORDER BY b.id
            """
        ).map { row in
            let (id, container, environment, kind, passed, total) = try row.decode(
                (Int64, String, String, String, Double, Double).self)
            return PendingBackfill(
                id: id, container: container, environment: environment, kind: kind,
                progress: total > 0 ? min(1, passed / total) : 0)
        }
    }

    package func runBackfill(_ id: Int64, rows: @escaping @Sendable (_ payload: Data) throws -> [IndexEntry]) async throws {
        while try await transaction({ connection in try await Self.backfillStep(id, rows: rows, connection) }) {
            try Task.checkCancellation()
        }
    }

    /// How many entries one step of a backfill indexes: its own short transaction.
    static let backfillBatch: Int64 = 256

    /// Adds the backfill's rows to the current versions of live entries of its kind (found by the kind's row
    /// of the entry's key, which every indexed entry has), zone by zone in id order and by sequence within
    /// one, from where the last step stopped. The job's row is locked for the step, so two nodes resuming
    /// the same backfill take turns. Whether there is more to do.
    private static func backfillStep(
        _ id: Int64, rows: (Data) throws -> [IndexEntry], _ connection: PostgresConnection
    ) async throws -> Bool {
        guard
            let job = try await connection.run(
                "SELECT container, environment, kind, zone_id, sequence FROM index_backfills WHERE id = \(id) FOR UPDATE"
            ).first
        else { return false }
        let (container, environment, kind, startZone, startSequence) = try job.decode(
            (String, String, String, Int64, Int64).self)
        var (zone, sequence) = (startZone, startSequence)
        let keyField = IndexFieldID.of(kind: kind, field: IndexEntry.keyField)
        while true {
            let versions = try await connection.run(
                """
                SELECT i.sequence, e.payload FROM entry_index i
                JOIN entries e ON e.zone_id = i.zone_id AND e.sequence = i.sequence AND e.payload IS NOT NULL
                WHERE i.zone_id = \(zone) AND i.sequence > \(sequence) AND i.field = \(keyField)
                ORDER BY i.sequence LIMIT \(backfillBatch)
                """
            ).map { try $0.decode((Int64, Data).self) }
            guard let last = versions.last else {
                guard
                    let next = try await connection.run(
                        """
                        SELECT id FROM zones
                        WHERE kind = \(ZoneAddress.Service.Kind.records.rawValue) AND container = \(container)
                            AND environment = \(environment) AND id > \(zone)
                        ORDER BY id LIMIT 1
                        """
                    ).value(Int64.self)
                else {
                    try await connection.run("DELETE FROM index_backfills WHERE id = \(id)")
                    return false
                }
                (zone, sequence) = (next, 0)
                continue
            }
            var indexRows = IndexRows(zoneID: zone)
            for (version, payload) in versions { indexRows.append(version, kind: kind, try rows(payload)) }
            if !indexRows.isEmpty { try await indexRows.insert(connection, ignoringExisting: true) }
            sequence = last.0
            break
        }
        try await connection.run(
            "UPDATE index_backfills SET zone_id = \(zone), sequence = \(sequence) WHERE id = \(id)")
        return true
    }
}
