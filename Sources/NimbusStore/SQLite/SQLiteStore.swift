import Foundation
import GRDB
import NimbusCore

/// The embedded backend: one SQLite file in WAL mode, through GRDB.
///
/// Every commit is `synchronous = FULL`: a write is acknowledged only once it is on disk, so neither a
/// killed process nor a power cut loses an acknowledged write.
public final class SQLiteStore: Sendable {
    let pool: DatabasePool

    /// Opens (creating when missing) the database at `path` and applies pending migrations.
    ///
    /// - Throws: `StoreError.newerDatabase` when the file was migrated by a newer Nimbus.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        let migrator = Self.migrator
        let unknown = try pool.read { db in
            try migrator.hasBeenSuperseded(db)
                ? Array(try migrator.appliedIdentifiers(db).subtracting(migrator.migrations)).sorted()
                : []
        }
        guard unknown.isEmpty else { throw StoreError.newerDatabase(unknownMigrations: unknown) }
        try migrator.migrate(pool)
    }

    /// Runs `body` in a write transaction, translating constraint violations into `StoreError.duplicate`.
    func write<T: Sendable>(
        duplicate: String = "record", _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        do {
            return try await pool.write(body)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw StoreError.duplicate(duplicate)
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(body)
    }
}

extension Date {
    var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
