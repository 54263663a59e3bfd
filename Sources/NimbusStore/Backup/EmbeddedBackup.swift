import Foundation
import GRDB
import NimbusCore

/// Backups of an embedded data directory, consistent while a server runs on it and takes writes.
///
/// A destination holds any number of backups and one folder of blobs they share:
///
///     DEST/backup-20261124-084512-123/   manifest.json, nimbus.sqlite, url-signing.key
///     DEST/blobs/<id>                     each blob once, whichever backups name it
///
/// The database is copied with SQLite's online backup API in one read transaction, so it is the state of one instant;
/// blobs are copied after it by name (a blob never changes once written), only those the destination
/// lacks. Meanwhile the server's blob sweep waits (`LocalBlobStore.sweepLock(for:)`), so no blob the copied
/// database names is deleted before it is copied. The backup is written under a temporary name and
/// renamed into place with its manifest, so a backup cut off midway is never taken for a whole one.
package enum EmbeddedBackup {
    static let namePrefix = "backup-"
    static let partialPrefix = ".partial-"
    static let blobFolder = "blobs"
    static let lockName = ".lock"

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
        try BackupFiles.makePrivateFolder(destination.appendingPathComponent(blobFolder))
        try BackupFiles.makePrivateFolder(data.blobs)
        // One backup at a time into a destination: rotation must not delete blobs a running backup relies on.
        return try BackupFiles.withLock(destination.appendingPathComponent(lockName)) {
            let manifest = try BackupFiles.withLock(LocalBlobStore.sweepLock(for: data.blobs), shared: true) {
                try write(data, to: destination, now: now)
            }
            if let keep { try rotate(destination, keep: keep) }
            return manifest
        }
    }

    private static func write(_ data: EmbeddedDataDirectory, to destination: URL, now: Date) throws -> BackupManifest {
        let id = try newID(in: destination, now: now)
        let partial = destination.appendingPathComponent(partialPrefix + id)
        try? FileManager.default.removeItem(at: partial)
        try BackupFiles.makePrivateFolder(partial)
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
            let blobs = try copyBlobs(
                from: data.blobs, to: destination.appendingPathComponent(blobFolder), known: knownBlobs(destination))
            var manifest = BackupManifest(
                format: BackupManifest.currentFormat, id: id, createdAt: now, migrations: [], files: files, blobs: blobs,
                counts: .init(accounts: 0, zones: 0, entries: 0, blobs: blobs.count, blobBytes: blobs.reduce(0) { $0 + $1.size }))
            try describe(database, in: &manifest)
            let manifestURL = partial.appendingPathComponent(BackupManifest.fileName)
            try manifest.encoded().write(to: manifestURL)
            try BackupFiles.synchronizeFile(manifestURL)
            try BackupFiles.synchronizeFolder(partial)
            let final = destination.appendingPathComponent(id)
            guard rename(partial.path, final.path) == 0 else { throw BackupFiles.posixError("cannot rename \(partial.path)") }
            try BackupFiles.synchronizeFolder(destination)
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
            if let file = known[name], Self.size(of: destination) == file.size {
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
            let incoming = target.appendingPathComponent(partialPrefix + name)
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

    private static func size(of file: URL) -> Int64? {
        var status = stat()
        return stat(file.path, &status) == 0 ? Int64(status.st_size) : nil
    }

    /// The destination's whole backups, oldest first.
    package static func list(_ destination: URL) throws -> [BackupManifest] {
        guard FileManager.default.fileExists(atPath: destination.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: destination.path).filter { $0.hasPrefix(namePrefix) }.sorted()
            .compactMap { try? BackupManifest.read(from: destination.appendingPathComponent($0)) }
    }

    private static func knownBlobs(_ destination: URL) throws -> [String: BackupManifest.File] {
        var known: [String: BackupManifest.File] = [:]
        for manifest in try list(destination) { for blob in manifest.blobs { known[blob.name] = blob } }
        return known
    }

    /// Deletes all but the newest `keep` whole backups, then the blobs none of those names and what
    /// unfinished backups left.
    private static func rotate(_ destination: URL, keep: Int) throws {
        let backups = try list(destination)
        let folders = try FileManager.default.contentsOfDirectory(atPath: destination.path).filter { $0.hasPrefix(namePrefix) }
        guard folders.count == backups.count else {
            // A backup whose manifest cannot be read (damaged, or written by a newer Nimbus) may need any blob.
            throw BackupError(
                .damaged,
                "\(folders.count - backups.count) backups in \(destination.path) have no readable manifest; nothing was rotated")
        }
        for old in backups.dropLast(max(keep, 1)) {
            try FileManager.default.removeItem(at: destination.appendingPathComponent(old.id))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: destination.path)
        for name in names where name.hasPrefix(partialPrefix) {
            try FileManager.default.removeItem(at: destination.appendingPathComponent(name))
        }
        let kept = Set(try list(destination).flatMap { $0.blobs.map(\.name) })
        let blobs = destination.appendingPathComponent(blobFolder)
        for name in try FileManager.default.contentsOfDirectory(atPath: blobs.path) where !kept.contains(name) {
            try FileManager.default.removeItem(at: blobs.appendingPathComponent(name))
        }
    }

    /// A name that sorts by time: `backup-20261124-084512-123`, with a suffix if that one exists.
    private static func newID(in destination: URL, now: Date) throws -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss-SSS"
        let base = namePrefix + formatter.string(from: now)
        var id = base
        var attempt = 1
        while FileManager.default.fileExists(atPath: destination.appendingPathComponent(id).path) {
            attempt += 1
            id = "\(base)-\(attempt)"
        }
        return id
    }
}
