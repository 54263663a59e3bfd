import Foundation
import NIOCore
import NimbusCore
import NimbusStore
import PostgresNIO

/// The statements every zone write runs, prepared by name: PostgresNIO prepares each once per pooled
/// connection, and PostgreSQL then parses and plans it once rather than at every write (for an unnamed
/// statement, parsing and planning were most of the database's time per write).
enum ZoneStatements {
    /// The zone's state, its row locked until the transaction ends, with its entries under some keys.
    struct LockZone: PostgresPreparedStatement {
        static let sql = """
            SELECT \(PostgresStore.zoneStateColumnsOfZ), e.key, e.payload, e.sequence, e.audience, e.size
            FROM zones z LEFT JOIN entries e ON e.zone_id = z.id AND e.key = ANY($4::text[])
            WHERE z.account_id = $1 AND z.service = $2 AND z.name = $3
            FOR UPDATE OF z
            """
        var zone: ZoneKey
        var keys: [String]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(zone.accountID)
            bindings.append(zone.address.service.encoded)
            bindings.append(zone.address.name)
            bindings.append(keys)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
    }

    /// Drops the index rows of the versions a write replaced.
    struct DropIndexRows: PostgresPreparedStatement {
        static let sql = "DELETE FROM entry_index WHERE zone_id = $1 AND sequence = ANY($2::bigint[])"
        var zoneID: Int64
        var sequences: [Int64]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(zoneID)
            bindings.append(sequences)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
    }

    /// Adds versions to records' histories.
    struct NoteVersions: PostgresPreparedStatement {
        static let sql = """
            INSERT INTO record_history (zone_id, key, sequence, note)
            SELECT $1, k, q, n FROM unnest($2::text[], $3::bigint[], $4::bytea[]) AS u(k, q, n)
            """
        var zoneID: Int64
        var notes: [(key: String, version: RecordVersionNote)]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(zoneID)
            bindings.append(notes.map(\.key))
            bindings.append(notes.map(\.version.sequence))
            bindings.append(notes.map { ByteBuffer(bytes: $0.version.note) })
            return bindings
        }

        func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
    }

    /// Trims records' histories to the newest `RecordVersionNote.kept` versions each.
    struct TrimHistories: PostgresPreparedStatement {
        static let sql = """
            DELETE FROM record_history h USING unnest($2::text[]) AS u(k)
            WHERE h.zone_id = $1 AND h.key = u.k AND h.sequence <= (
                SELECT sequence FROM record_history WHERE zone_id = $1 AND key = u.k ORDER BY sequence DESC LIMIT 1 OFFSET $3)
            """
        var zoneID: Int64
        var keys: [String]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(zoneID)
            bindings.append(keys)
            bindings.append(Int64(RecordVersionNote.kept))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
    }

    /// Writes entries' new versions (a nil payload or audience travels as a flag beside a placeholder:
    /// arrays bound as one value hold no NULL).
    struct PutEntries: PostgresPreparedStatement {
        static let sql = """
            INSERT INTO entries (zone_id, key, payload, size, sequence, audience)
            SELECT $1, k, CASE WHEN pn THEN NULL ELSE p END, s, q, CASE WHEN an THEN NULL ELSE a END
            FROM unnest($2::text[], $3::bytea[], $4::bool[], $5::bigint[], $6::bigint[], $7::text[], $8::bool[])
                AS u(k, p, pn, s, q, a, an)
            ON CONFLICT (zone_id, key) DO UPDATE
            SET payload = excluded.payload, size = excluded.size, sequence = excluded.sequence, audience = excluded.audience
            """
        var zoneID: Int64
        var versions: [PostgresZoneTransaction.StoredVersion]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(zoneID)
            bindings.append(versions.map(\.entry.key))
            bindings.append(versions.map { ByteBuffer(bytes: $0.entry.payload ?? Data()) })
            bindings.append(versions.map { $0.entry.payload == nil })
            bindings.append(versions.map { Int64($0.size) })
            bindings.append(versions.map(\.entry.sequence))
            bindings.append(versions.map { $0.entry.audience ?? "" })
            bindings.append(versions.map { $0.entry.audience == nil })
            return bindings
        }

        func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
    }

    /// Advances the account's per-service counter (`PostgresStore.advancing`) and stamps the zone's row with
    /// it and with the zone's new state.
    struct RecordChange: PostgresPreparedStatement {
        static let sql =
            PostgresStore.advancing
            + " UPDATE zones SET changed_at = advanced.sequence, sequence = $3, live_entries = $4, live_bytes = $5 FROM advanced WHERE id = $6"
        var zone: ZoneKey
        var zoneID: Int64
        var state: ZoneState

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(zone.accountID)
            bindings.append(zone.address.service.encoded)
            bindings.append(state.sequence)
            bindings.append(Int64(state.liveEntries))
            bindings.append(Int64(state.liveBytes))
            bindings.append(zoneID)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
    }
}

extension PostgresConnection {
    /// Runs a prepared statement and reads all its rows (as `run` does an unnamed one).
    @discardableResult
    func run<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [PostgresRow]
    where Statement.Row == PostgresRow {
        var rows = [PostgresRow]()
        for try await row in try await execute(statement, logger: PostgresStore.logger) { rows.append(row) }
        return rows
    }
}
