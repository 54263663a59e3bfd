import Foundation
import NimbusCore
import NimbusStore
import PostgresNIO

/// Backups of a PostgreSQL deployment into a `BackupDestination`, as consistent as an embedded one's: the
/// database as `pg_dump` writes it (its custom format, which `pg_restore` reads) and every blob, in a
/// destination shared with embedded backups' layout and rotation.
///
/// The dump is of one snapshot, exported by a transaction that also reads the manifest's migrations and
/// counts. Before it, the blob store holds sweeps off on every node (`BlobStore.holdingOffSweeps`) until the
/// blobs are copied: a blob the dump names was stored before the snapshot and cannot be deleted before it
/// is copied, so copying the store's blobs after the dump copies every one the dump names (and, at most,
/// a few that nothing names yet).
package enum PostgresBackup {
    /// The dump's name in a backup's folder.
    package static let dumpName = "database.dump"

    /// Backs up the database `store` connects to and `blobs` into `destination`, with `otherFiles` (a node's
    /// `url-signing.key`) that exist; then keeps only the newest `keep` backups there (nil: all).
    @discardableResult
    package static func create(
        of store: PostgresStore, blobs: any BlobStore, otherFiles: [URL], to destination: URL, keep: Int? = nil,
        programs: PostgresPrograms = PostgresPrograms(), now: Date = Date()
    ) async throws -> BackupManifest {
        // An unreachable database is said before anything is made.
        try await store.rows("SELECT 1")
        return try await BackupDestination(destination).backUp(blobs: blobs, keep: keep, now: now) { id, folder in
            let dump = folder.appendingPathComponent(dumpName)
            return try await store.dumped(into: dump, programs: programs) { description in
                let (size, sha256) = try BackupFiles.digest(dump)
                let files =
                    [BackupManifest.File(name: dumpName, size: size, sha256: sha256)]
                    + (try BackupFiles.copyExisting(otherFiles, into: folder))
                var manifest = BackupManifest(id: id, createdAt: now, database: .postgresql, files: files, blobs: [])
                manifest.migrations = description.migrations
                manifest.counts = description.counts
                return manifest
            }
        }
    }
}

/// What a backup's manifest says of its database, read in the dump's snapshot.
struct DumpDescription: Sendable {
    var migrations: [String]
    var counts: BackupManifest.Counts
}

extension PostgresStore {
    /// Dumps the database into `file` with `pg_dump`, of a snapshot this store's transaction exports and
    /// holds until the dump is written, and reads the migrations and counts of the same snapshot; then
    /// `finish` makes the manifest, while the snapshot is still held.
    func dumped<T: Sendable>(
        into file: URL, programs: PostgresPrograms, _ finish: @escaping @Sendable (DumpDescription) throws -> T
    ) async throws -> T {
        // The dump connects to the server this store's pool uses: a snapshot is imported where it was exported.
        let (location, server) = (servers.location, servers.current)
        return try await leased { connection in
            try await connection.run("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            do {
                guard
                    try await connection.run("SELECT to_regclass('nimbus_migrations') IS NOT NULL").value(Bool.self)
                        == true
                else { throw BackupError(.notFound, "\(location) holds no Nimbus database") }
                let snapshot = try await connection.run("SELECT pg_export_snapshot()").value(String.self) ?? ""
                let migrations = try await connection.run("SELECT identifier FROM nimbus_migrations ORDER BY identifier")
                    .values(String.self)
                func count(_ sql: String) async throws -> Int {
                    Int(try await connection.run(PostgresQuery(unsafeSQL: sql)).value(Int64.self) ?? 0)
                }
                let counts = BackupManifest.Counts(
                    accounts: try await count("SELECT count(*) FROM accounts"),
                    zones: try await count("SELECT count(*) FROM zones"),
                    entries: try await count("SELECT count(*) FROM entries WHERE payload IS NOT NULL"), blobs: 0, blobBytes: 0)
                try await programs.run(
                    "pg_dump",
                    [
                        "--format=custom", "--snapshot=\(snapshot)", "--file=\(file.path)",
                        "--dbname=\(location.connectionString(server))",
                    ], for: location)
                try BackupFiles.synchronizeFile(file)
                let result = try finish(DumpDescription(migrations: migrations, counts: counts))
                try await connection.run("COMMIT")
                return result
            } catch {
                _ = try? await connection.run("ROLLBACK")
                throw error
            }
        }
    }
}
