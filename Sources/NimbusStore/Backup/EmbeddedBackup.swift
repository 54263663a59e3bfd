import Foundation
import GRDB
import NimbusCore

/// Backups of an embedded data directory, consistent while a server runs on it and takes writes, into a
/// `BackupDestination`: the backup's folder holds the database and the data directory's other files.
///
/// The database is copied with SQLite's online backup API in one read transaction, so it is the state of one instant;
/// blobs are copied after it through the blob store (the data directory's folder, or the bucket its server
/// keeps them in) by name (a blob never changes once written), only those the destination lacks. Meanwhile
/// the blob store holds sweeps off (`BlobStore.holdingOffSweeps`), so no blob the copied database names is
/// deleted before it is copied.
package enum EmbeddedBackup {
    /// Backs up `data` and its blobs (`blobs`, or by default its own folder) into `destination`, then keeps
    /// only the newest `keep` backups there (nil: all).
    @discardableResult
    package static func create(
        of data: EmbeddedDataDirectory, blobs: (any BlobStore)? = nil, to destination: URL, keep: Int? = nil,
        now: Date = Date()
    ) async throws -> BackupManifest {
        guard FileManager.default.fileExists(atPath: data.database.path) else {
            throw BackupError(.notFound, "\(data.url.path) holds no Nimbus database (\(data.database.lastPathComponent))")
        }
        let (into, from) = (destination.standardizedFileURL.path, data.url.standardizedFileURL.path)
        guard into != from, into != data.blobs.standardizedFileURL.path else {
            // The destination's blob folder would be the live one, which rotation prunes.
            throw BackupError(.invalidDestination, "back up to a folder other than the data directory \(from)")
        }
        let blobs = try blobs ?? LocalBlobStore(directory: data.blobs)
        return try await BackupDestination(destination).backUp(blobs: blobs, keep: keep, now: now) { id, folder in
            try await BlockingWork.run { try copyDatabase(data, into: folder, id: id, now: now) }
        }
    }

    /// Copies the database and the data directory's other files into the backup's folder; the manifest of
    /// those, with the database's migrations and counts.
    private static func copyDatabase(_ data: EmbeddedDataDirectory, into partial: URL, id: String, now: Date) throws
        -> BackupManifest
    {
        let database = partial.appendingPathComponent(data.database.lastPathComponent)
        try snapshot(data.database, into: database)
        let (size, sha256) = try BackupFiles.digest(database)
        let files =
            [BackupManifest.File(name: database.lastPathComponent, size: size, sha256: sha256)]
            + (try BackupFiles.copyExisting(data.otherFiles, into: partial))
        var manifest = BackupManifest(id: id, createdAt: now, database: .sqlite, files: files, blobs: [])
        try describe(database, in: &manifest)
        return manifest
    }

    /// A consistent copy of the live database through SQLite's online backup API, in one step: it copies the
    /// pages in one read transaction, so writers go on (WAL mode) and the copy is the state at its start.
    /// (`VACUUM INTO` rebuilds every table and index instead: 0.4 s slower at 1,000,000 records, BENCHMARKS.md.)
    private static func snapshot(_ source: URL, into target: URL) throws {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        let reader = try DatabaseQueue(path: source.path, configuration: configuration)
        let copy = try DatabaseQueue(path: target.path)
        try reader.backup(to: copy)
        try copy.close()
        try reader.close()
        try BackupFiles.synchronizeFile(target)
    }

    /// Reads the copy's migrations and counts into the manifest.
    private static func describe(_ database: URL, in manifest: inout BackupManifest) throws {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: database.path, configuration: configuration)
        defer { try? queue.close() }
        try queue.inDatabase { db in
            manifest.migrations = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
            manifest.counts.accounts = try Int.fetchOne(db, sql: "SELECT count(*) FROM accounts") ?? 0
            manifest.counts.zones = try Int.fetchOne(db, sql: "SELECT count(*) FROM zones") ?? 0
            manifest.counts.entries = try Int.fetchOne(db, sql: "SELECT count(*) FROM entries WHERE payload IS NOT NULL") ?? 0
        }
    }
}
