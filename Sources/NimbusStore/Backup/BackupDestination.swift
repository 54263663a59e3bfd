import Foundation

/// A folder holding any number of backups (of an embedded data directory or of a PostgreSQL deployment)
/// and one folder of blobs they share:
///
///     DEST/backup-20261124-084512-123/   manifest.json and the database's copy
///     DEST/blobs/<id>                     each blob once, whichever backups name it
///
/// A backup is written under a temporary name and renamed into place with its manifest, so a backup cut
/// off midway is never taken for a whole one; one backup at a time writes into a destination (its lock),
/// and restores wait for a rotation to end.
package struct BackupDestination: Sendable {
    static let namePrefix = "backup-"
    static let partialPrefix = ".partial-"
    static let blobFolderName = "blobs"
    static let lockName = ".lock"

    package let url: URL

    package init(_ url: URL) { self.url = url }

    package var blobs: URL { url.appendingPathComponent(Self.blobFolderName) }
    package var lock: URL { url.appendingPathComponent(Self.lockName) }

    /// Takes one backup into the destination. While no other backup writes here and `blobs` holds sweeps off,
    /// `copyDatabase` copies the database into the new backup's folder (given with the backup's id) and returns
    /// the manifest of what it copied; then every blob of `blobs` the destination lacks is copied, and the
    /// backup is put in place. Then only the newest `keep` backups are kept (nil: all). A backup that fails
    /// leaves nothing but blobs, which a later one reuses.
    package func backUp(
        blobs: any BlobStore, keep: Int?, now: Date,
        copyDatabase: @escaping @Sendable (_ id: String, _ folder: URL) async throws -> BackupManifest
    ) async throws -> BackupManifest {
        try BackupFiles.makePrivateFolder(self.blobs)
        return try await BackupFiles.holdingLock(lock) {
            let manifest = try await blobs.holdingOffSweeps {
                let (id, partial) = try startBackup(now: now)
                do {
                    var manifest = try await copyDatabase(id, partial)
                    manifest.blobs = try await BackupBlobs.copy(from: blobs, to: self)
                    manifest.counts.blobs = manifest.blobs.count
                    manifest.counts.blobBytes = manifest.blobs.reduce(0) { $0 + $1.size }
                    try finishBackup(manifest, partial: partial)
                    return manifest
                } catch {
                    try? FileManager.default.removeItem(at: partial)
                    throw error
                }
            }
            if let keep { try rotate(keep: keep) }
            return manifest
        }
    }

    /// The destination's whole backups, oldest first.
    package func list() throws -> [BackupManifest] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasPrefix(Self.namePrefix) }.sorted()
            .compactMap { try? BackupManifest.read(from: url.appendingPathComponent($0)) }
    }

    /// Every blob the destination's backups name, with the size and digest their manifests give.
    package func knownBlobs() throws -> [String: BackupManifest.File] {
        var known: [String: BackupManifest.File] = [:]
        for manifest in try list() { for blob in manifest.blobs { known[blob.name] = blob } }
        return known
    }

    /// A new backup's id, which sorts by time (`backup-20261124-084512-123`, with a suffix if that one
    /// exists), and the empty folder it is written in under a temporary name.
    private func startBackup(now: Date) throws -> (id: String, partial: URL) {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss-SSS"
        let base = Self.namePrefix + formatter.string(from: now)
        var id = base
        var attempt = 1
        while FileManager.default.fileExists(atPath: url.appendingPathComponent(id).path) {
            attempt += 1
            id = "\(base)-\(attempt)"
        }
        let partial = url.appendingPathComponent(Self.partialPrefix + id)
        try? FileManager.default.removeItem(at: partial)
        try BackupFiles.makePrivateFolder(partial)
        return (id, partial)
    }

    /// Writes `manifest` into the backup's temporary folder and renames the folder into place, all synced.
    private func finishBackup(_ manifest: BackupManifest, partial: URL) throws {
        let manifestURL = partial.appendingPathComponent(BackupManifest.fileName)
        try manifest.encoded().write(to: manifestURL)
        try BackupFiles.synchronizeFile(manifestURL)
        try BackupFiles.synchronizeFolder(partial)
        let final = url.appendingPathComponent(manifest.id)
        guard rename(partial.path, final.path) == 0 else { throw BackupFiles.posixError("cannot rename \(partial.path)") }
        try BackupFiles.synchronizeFolder(url)
    }

    /// Deletes all but the newest `keep` whole backups, then the blobs none of those names and what
    /// unfinished backups left.
    private func rotate(keep: Int) throws {
        let backups = try list()
        let folders = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasPrefix(Self.namePrefix) }
        guard folders.count == backups.count else {
            // A backup whose manifest cannot be read (damaged, or written by a newer Nimbus) may need any blob.
            throw BackupError(
                .damaged,
                "\(folders.count - backups.count) backups in \(url.path) have no readable manifest; nothing was rotated")
        }
        for old in backups.dropLast(max(keep, 1)) {
            try FileManager.default.removeItem(at: url.appendingPathComponent(old.id))
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: url.path) where name.hasPrefix(Self.partialPrefix) {
            try FileManager.default.removeItem(at: url.appendingPathComponent(name))
        }
        let kept = Set(try list().flatMap { $0.blobs.map(\.name) })
        for name in try FileManager.default.contentsOfDirectory(atPath: blobs.path) where !kept.contains(name) {
            try FileManager.default.removeItem(at: blobs.appendingPathComponent(name))
        }
    }

    /// `source` when it is one backup's folder, else the newest backup in it. The newest is taken even
    /// when it is damaged (and then refused): restoring an older one without being asked would lose more.
    package static func backupFolder(_ source: URL) throws -> URL {
        if FileManager.default.fileExists(atPath: source.appendingPathComponent(BackupManifest.fileName).path)
            || source.lastPathComponent.hasPrefix(namePrefix)
        {
            guard FileManager.default.fileExists(atPath: source.path) else {
                throw BackupError(.notFound, "there is no backup at \(source.path)")
            }
            return source
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: source.path)) ?? []
        guard let newest = names.filter({ $0.hasPrefix(namePrefix) }).max() else {
            let partial = names.contains { $0.hasPrefix(partialPrefix) }
            throw BackupError(
                partial ? .incomplete : .notFound,
                partial ? "\(source.path) holds only a backup that did not finish" : "there is no backup in \(source.path)")
        }
        return source.appendingPathComponent(newest)
    }

    /// Runs `body` on a backup's folder (`source`, or the newest in it) while no backup into its
    /// destination rotates, so the backup being read is not deleted midway. (No lock file: no backup ever
    /// ran there.)
    package static func reading<T: Sendable>(_ source: URL, _ body: (URL) async throws -> T) async throws -> T {
        let folder = try backupFolder(source)
        let lock = BackupDestination(folder.deletingLastPathComponent()).lock
        guard FileManager.default.fileExists(atPath: lock.path) else { return try await body(folder) }
        return try await BackupFiles.holdingLock(lock, shared: true) { try await body(folder) }
    }
}
