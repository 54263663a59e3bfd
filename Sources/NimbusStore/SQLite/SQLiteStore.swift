import Foundation
import GRDB
import NimbusCore

/// The embedded backend: one SQLite file in WAL mode, through GRDB.
///
/// Every commit is `synchronous = FULL`: a write is acknowledged only once it is on disk, so neither a
/// killed process nor a power cut loses an acknowledged write.
package final class SQLiteStore: Sendable {
    let pool: DatabasePool
    let groupCommit: GroupCommit
    private let checkpointer: WALCheckpointer

    /// Opens (creating when missing) the database at `path` and applies pending migrations. Before it
    /// migrates an existing database, which can take minutes when it is large, it tells `migrating` the
    /// names of the migrations to come (and whether one rewrites data: a backup first is wise); when
    /// `migrating` throws, nothing is migrated.
    ///
    /// - Throws: `StoreError.newerDatabase` when the file was migrated by a newer Nimbus.
    package init(path: String, migrating: (_ pending: [String], _ rewritesData: Bool) throws -> Void = { _, _ in }) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            // Index pages are read far more than written: a larger page cache (allocated only as it
            // fills) and memory-mapped reads keep them out of read system calls; the map reaches SQLite's
            // largest (2 GiB), since a zone of a million records is a 1.5 GB file.
            try db.execute(sql: "PRAGMA cache_size = -32768")
            try db.execute(sql: "PRAGMA mmap_size = 2147418112")
            db.add(function: SQLiteStore.distanceFunction)
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        // Only the writer commits, and GRDB sets its `synchronous` to NORMAL (no sync per commit in WAL
        // mode) after `prepareDatabase` has run, so it is set here, once the pool is open.
        try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        let migrator = Self.migrator
        let applied = try pool.read { db in try migrator.appliedIdentifiers(db) }
        let unknown = applied.subtracting(migrator.migrations).sorted()
        guard unknown.isEmpty else { throw StoreError.newerDatabase(unknownMigrations: unknown) }
        let pending = migrator.migrations.filter { !applied.contains($0) }
        if !pending.isEmpty {
            if !applied.isEmpty { try migrating(pending, !Self.dataRewritingMigrations.isDisjoint(with: pending)) }
            try migrator.migrate(pool)
            // A migration that rewrites a table fills the write-ahead log with all of it; hand the space back.
            _ = try pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        }
        groupCommit = GroupCommit(pool: pool)
        checkpointer = WALCheckpointer(path: path)
        try pool.writeWithoutTransaction { [checkpointer] db in try checkpointer.install(on: db) }
    }

    /// The migrations the existing database at `path` lacks, and whether one rewrites data (a backup first is
    /// wise); nil when there is no database there yet, or it lacks none.
    package static func pendingMigrations(at path: String) throws -> (names: [String], rewritesData: Bool)? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        let applied = try queue.read { db in try migrator.appliedIdentifiers(db) }
        let pending = migrator.migrations.filter { !applied.contains($0) }
        guard !applied.isEmpty, !pending.isEmpty else { return nil }
        return (pending, !dataRewritingMigrations.isDisjoint(with: pending))
    }

    deinit {
        // The writer's hook points at the checkpointer, which may go first.
        pool.writeWithoutTransaction { db in WALCheckpointer.uninstall(from: db) }
    }

    // Database work never runs on Swift's cooperative threads (two of them on a 2-core machine: one long
    // read or a wait for the writer there stalls every request). Reads and writes outside zone commits go
    // through GRDB's async access, which runs them on its own queues (a reader's, the writer's) and
    // resumes the caller; zone commits go through `GroupCommit`'s thread.

    /// Runs `body` in a write transaction, translating constraint violations into `StoreError.duplicate`.
    func write<T: Sendable>(duplicate: String = "record", _ body: @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.write(body)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw StoreError.duplicate(duplicate)
        } catch {
            throw Self.storeError(error)
        }
    }

    func read<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch {
            // A large sort may need temporary space too.
            throw Self.storeError(error)
        }
    }

    /// SQLite's failures that callers can act on, as store errors; the others as they are.
    static func storeError(_ error: any Error) -> any Error {
        if let error = error as? DatabaseError, error.resultCode == .SQLITE_FULL { return StoreError.storageFull }
        return error
    }
}
