import Foundation
import GRDB
import NimbusStore
import PostgresNIO

/// `nimbus migrate`: a single-node install's SQLite database copied into an empty PostgreSQL database, row
/// for row, so that every identifier stays what it was: zone ids and sequences (which change tokens carry),
/// session and token digests (devices and apps go on without signing in again), everything else.
///
/// The copy is one PostgreSQL transaction, committed only once it is verified: each table's rows, and each
/// zone's entries and index rows, counted and summed (`CopyChecksums`) from the source and read back from
/// the target. The source is read from one snapshot, and compared with itself at the end: a server writing
/// to it meanwhile makes the copy fail rather than leave its writes behind.
package enum EmbeddedToPostgres {
    /// What was copied.
    package struct Report: Sendable {
        /// Each table and its rows, in the order copied.
        package var tables: [(name: String, rows: Int)]
        package var zones: Int
    }

    package enum Failure: Error, CustomStringConvertible, Equatable {
        case missingSource(String)
        case sourceNotMigrated([String])
        case targetHoldsData(table: String)
        case unknownSchema(String)
        case sourceChanged([String])
        case copyDiffers([String])

        package var description: String {
            switch self {
            case .missingSource(let path): "there is no Nimbus database at \(path)"
            case .sourceNotMigrated(let pending):
                "the data directory awaits migrations of this Nimbus (\(pending.joined(separator: ", "))): run `nimbus serve` on it once, stop it, then migrate"
            case .targetHoldsData(let table):
                "the target database already holds data (table \(table)); migrate into a new, empty database"
            case .unknownSchema(let detail): "the two databases' tables do not correspond: \(detail)"
            case .sourceChanged(let tables):
                "the data directory changed while it was copied (\(tables.joined(separator: "; "))): stop `nimbus serve` on it and migrate again; nothing was copied"
            case .copyDiffers(let differences):
                "the copy did not read back as the source (\(differences.joined(separator: "; "))); nothing was copied"
            }
        }
    }

    /// Every table of the shared schema, in an order their references allow. The nodes' own bookkeeping
    /// (`nimbus_migrations`, SQLite's `grdb_migrations` and `sqlite_sequence`) is not copied.
    static let tables = [
        "teams", "accounts", "containers", "apps", "entitlements", "api_tokens", "server_keys", "devices", "sessions",
        "schemas", "role_members", "restores", "zones", "service_sequences", "zone_tombstones", "entries", "record_history",
        "index_fields",
        "entry_index", "zone_grants", "device_watermarks", "index_backfills", "zone_purges", "asset_uploads",
        "periodic_runs", "team_members",
    ]

    /// Copies the SQLite database at `path` into `target`, which must hold no data yet; `progress` hears of
    /// each table as it is copied.
    package static func copy(from path: String, to target: PostgresStore, progress: @escaping @Sendable (String) -> Void)
        async throws -> Report
    {
        guard FileManager.default.fileExists(atPath: path) else { throw Failure.missingSource(path) }
        // Opening it as the server does refuses a database of a newer Nimbus; one of an older Nimbus is
        // refused here rather than migrated by a command that is not meant to change its source.
        _ = try SQLiteStore(path: path) { pending, _ in
            guard pending.isEmpty else { throw Failure.sourceNotMigrated(pending) }
        }
        let source = try DatabasePool(path: path)
        let snapshot = try source.makeSnapshot()
        let sourceColumns = try await snapshot.read { db in
            try Dictionary(uniqueKeysWithValues: tables.map { ($0, try SourceTable(db, $0)) })
        }

        return try await target.transaction { connection in
            let targetColumns = try await Self.targetColumns(connection)
            if let unknown = Set(targetColumns.keys).subtracting(tables).subtracting(["nimbus_migrations"]).sorted().first {
                throw Failure.unknownSchema("this Nimbus does not know how to copy table \(unknown)")
            }
            let plans = try tables.map { table in
                guard let columns = targetColumns[table], let sourceTable = sourceColumns[table] else {
                    throw Failure.unknownSchema(
                        "table \(table) is missing from \(targetColumns[table] == nil ? "PostgreSQL" : "SQLite")")
                }
                return try TablePlan(table: table, source: sourceTable, target: columns)
            }
            for table in tables {
                let holdsRows = try await connection.run("SELECT EXISTS (SELECT 1 FROM \(unescaped: table))").value(Bool.self)
                if holdsRows == true { throw Failure.targetHoldsData(table: table) }
            }
            let copied = try await Self.copyRows(plans, from: snapshot, into: connection, progress: progress)
            try await Self.continueIdentities(connection, snapshot: snapshot, columns: targetColumns)

            progress("verifying the copy")
            let differences = copied.differences(from: try await Self.checksums(plans, readBackFrom: connection))
            guard differences.isEmpty else { throw Failure.copyDiffers(differences) }
            let changed = copied.differences(from: try await Self.checksums(plans, of: source))
            guard changed.isEmpty else { throw Failure.sourceChanged(changed) }
            return Report(
                tables: plans.map { ($0.table, copied.tables[$0.table]?.rows ?? 0) }, zones: copied.tables["zones"]?.rows ?? 0)
        }
    }

    /// Inserts every table's rows, page by page as the snapshot gives them; their checksums.
    private static func copyRows(
        _ plans: [TablePlan], from snapshot: DatabaseSnapshot, into connection: PostgresConnection,
        progress: @Sendable (String) -> Void
    ) async throws -> CopyChecksums {
        var copied = CopyChecksums()
        for plan in plans {
            var after: [DatabaseValue]? = nil
            while true {
                let page = try await snapshot.read { [after] db in try plan.page(db, after: after) }
                guard let last = page.last else { break }
                for row in page { copied.add(try plan.canonical(row), to: plan.table) }
                try await connection.run(try plan.insert(page))
                after = plan.key(of: last)
            }
            progress("copied \(plan.table): \(copied.tables[plan.table]?.rows ?? 0) rows")
        }
        return copied
    }

    /// The checksums of what the target holds now, read back in the copy's transaction.
    private static func checksums(_ plans: [TablePlan], readBackFrom connection: PostgresConnection) async throws
        -> CopyChecksums
    {
        var readBack = CopyChecksums()
        for plan in plans {
            let rows = try await connection.query(plan.selectAll, logger: PostgresStore.logger)
            for try await row in rows { readBack.add(try plan.canonical(row), to: plan.table) }
        }
        return readBack
    }

    /// The checksums of what the source holds now, outside the snapshot the copy read.
    private static func checksums(_ plans: [TablePlan], of source: DatabasePool) async throws -> CopyChecksums {
        try await source.read { db in
            var now = CopyChecksums()
            for plan in plans {
                let rows = try Row.fetchCursor(db, sql: plan.sourceSelect)
                while let row = try rows.next() { now.add(try plan.canonical(Array(row.databaseValues)), to: plan.table) }
            }
            return now
        }
    }

    /// Each table's columns in PostgreSQL: name, type and whether it is an identity column, in order.
    private static func targetColumns(_ connection: PostgresConnection) async throws -> [String: [TargetColumn]] {
        let rows = try await connection.run(
            """
            SELECT table_name::text, column_name::text, data_type::text, is_identity::text = 'YES' FROM information_schema.columns
            WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position
            """)
        var columns = [String: [TargetColumn]]()
        for row in rows {
            let (table, name, type, identity) = try row.decode((String, String, String, Bool).self)
            columns[table, default: []].append(TargetColumn(name: name, type: type, isIdentity: identity))
        }
        return columns
    }

    /// Starts each identity column's sequence past every id the source handed out, so none is handed out
    /// again (a zone's id is in the change tokens of its devices).
    private static func continueIdentities(
        _ connection: PostgresConnection, snapshot: DatabaseSnapshot, columns: [String: [TargetColumn]]
    ) async throws {
        for table in tables {
            for column in columns[table] ?? [] where column.isIdentity {
                let highest = try await snapshot.read { db -> Int64 in
                    let stored = try Int64.fetchOne(db, sql: "SELECT max(\(column.name)) FROM \(table)") ?? 0
                    // AUTOINCREMENT's record of the highest id ever used, deleted rows' included.
                    let used =
                        try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [table]) ?? 0
                    return max(stored, used)
                }
                guard highest > 0 else { continue }
                try await connection.run(
                    "SELECT setval(pg_get_serial_sequence(\(table), \(column.name)), \(highest), true)")
            }
        }
    }
}

/// A column of the PostgreSQL schema.
struct TargetColumn: Sendable {
    var name: String
    /// As `information_schema` names it: `bigint`, `text`, `boolean`, `bytea`, `double precision`, …
    var type: String
    var isIdentity: Bool
}

/// A table of the SQLite source: its columns in order, and the columns of its primary key.
struct SourceTable: Sendable {
    var columns: [String]
    var primaryKey: [String]

    init(_ db: Database, _ table: String) throws {
        let info = try Row.fetchAll(db, sql: "PRAGMA table_info(\(table))")
        guard !info.isEmpty else { throw EmbeddedToPostgres.Failure.unknownSchema("table \(table) is missing from SQLite") }
        columns = info.map { $0["name"] }
        primaryKey = info.filter { ($0["pk"] as Int) > 0 }.sorted { ($0["pk"] as Int) < ($1["pk"] as Int) }.map { $0["name"] }
    }
}
