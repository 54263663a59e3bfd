import Foundation
import GRDB
import NimbusCore

/// Backups of an embedded data directory, consistent while a server runs on it and takes writes, into a
/// `BackupDestination`: the backup's folder holds the database and the data directory's other files.
///
/// The database is copied with SQLite's online backup API in one read transaction, so it is the state of one instant;
/// blobs are copied after it by name (a blob never changes once written), only those the destination
/// lacks. Meanwhile the server's blob sweep waits (`LocalBlobStore.sweepLock(for:)`), so no blob the copied
/// database names is deleted before it is copied.
package enum EmbeddedBackup {
    /// Backs up `data` into `destination`, then keeps only the newest `keep` backups there (nil: all).
    @discardableResult
    package static func create(of data: EmbeddedDataDirectory, to destination: URL, keep: Int? = nil, now: Date = Date())
        throws -> BackupManifest
    {
        guard FileManager.default.fileExists(atPath: data.database.path) else {
            throw BackupError(.notFound, "\(data.url.path) holds no Nimbus database (\(data.database.lastPathComponent))")
        }
        let (into, from) = (destination.standardizedFileURL.path, data.url.standardizedFileURL.path)
        guard into != from, into != data.blobs.standardizedFileURL.path else {
            // The destination's blob folder would be the live one, which rotation prunes.
            throw BackupError(.invalidDestination, "back up to a folder other than the data directory \(from)")
        }
        let destination = BackupDestination(destination)
        try BackupFiles.makePrivateFolder(destination.blobs)
        try BackupFiles.makePrivateFolder(data.blobs)
        // One backup at a time into a destination: rotation must not delete blobs a running backup relies on.
        return try BackupFiles.withLock(destination.lock) {
            let manifest = try BackupFiles.withLock(LocalBlobStore.sweepLock(for: data.blobs), shared: true) {
                try write(data, to: destination, now: now)
            }
            if let keep { try destination.rotate(keep: keep) }
            return manifest
        }
    }

    private static func write(_ data: EmbeddedDataDirectory, to destination: BackupDestination, now: Date) throws
        -> BackupManifest
    {
        let (id, partial) = try destination.startBackup(now: now)
        do {
            var files: [BackupManifest.File] = []
            let database = partial.appendingPathComponent(data.database.lastPathComponent)
            try snapshot(data.database, into: database)
            let (size, sha256) = try BackupFiles.digest(database)
            files.append(BackupManifest.File(name: database.lastPathComponent, size: size, sha256: sha256))
            for source in data.otherFiles {
                let name = source.lastPathComponent
                guard FileManager.default.fileExists(atPath: source.path) else { continue }
                let (size, sha256) = try BackupFiles.copy(source, to: partial.appendingPathComponent(name))
                files.append(BackupManifest.File(name: name, size: size, sha256: sha256))
            }
            let blobs = try copyBlobs(from: data.blobs, to: destination.blobs, known: destination.knownBlobs())
            var manifest = BackupManifest(
                id: id, createdAt: now, database: .sqlite, files: files, blobs: blobs)
            try describe(database, in: &manifest)
            try destination.finishBackup(manifest, partial: partial)
            return manifest
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
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

    /// Copies every finished blob the destination lacks; the list of all, with sizes and digests (known
    /// ones from earlier manifests, not read again).
    private static func copyBlobs(from source: URL, to target: URL, known: [String: BackupManifest.File]) throws
        -> [BackupManifest.File]
    {
        var blobs: [BackupManifest.File] = []
        var copied = false
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path).sorted()
        where LocalBlobStore.isBlobName(name) {
            let destination = target.appendingPathComponent(name)
            if let file = known[name], BackupFiles.size(of: destination) == file.size {
                blobs.append(file)
                continue
            }
            if known[name] == nil, FileManager.default.fileExists(atPath: destination.path) {
                // Left by a backup that did not finish: whole (it was renamed into place once synced), so read it.
                let (size, sha256) = try BackupFiles.digest(destination)
                blobs.append(BackupManifest.File(name: name, size: size, sha256: sha256))
                continue
            }
            // New, or a copy whose size is not what an earlier manifest says (damaged): copied (again).
            let incoming = target.appendingPathComponent(BackupDestination.partialPrefix + name)
            try? FileManager.default.removeItem(at: incoming)
            let (size, sha256) = try BackupFiles.copy(source.appendingPathComponent(name), to: incoming)
            guard rename(incoming.path, destination.path) == 0 else {
                throw BackupFiles.posixError("cannot rename \(incoming.path)")
            }
            blobs.append(BackupManifest.File(name: name, size: size, sha256: sha256))
            copied = true
        }
        if copied { try BackupFiles.synchronizeFolder(target) }
        return blobs
    }
}
