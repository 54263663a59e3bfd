import Foundation
import GRDB
import NimbusCore

/// Restores a backup (`EmbeddedBackup`) into a new data directory, checking every byte against the
/// manifest first: a backup that did not finish, lacks a file, or differs from its manifest anywhere is
/// refused, and the target is left as it was.
package enum EmbeddedRestore {
    /// Restores `source` (a destination's newest backup, or one backup's folder) into `target`, which must
    /// not exist or be empty. The restored database starts a new epoch (`SequenceHistory`): clients'
    /// tokens from after the backup are answered as expired, so they resync rather than miss changes.
    @discardableResult
    package static func restore(from source: URL, into target: EmbeddedDataDirectory, now: Date = Date()) throws
        -> BackupManifest
    {
        let folder = try backupFolder(source)
        // A backup into the same destination rotates while it holds the destination's lock: wait for it, so
        // the backup being restored is not deleted midway. (No lock file: no backup ever ran there.)
        let lock = folder.deletingLastPathComponent().appendingPathComponent(EmbeddedBackup.lockName)
        guard FileManager.default.fileExists(atPath: lock.path) else { return try restore(folder, into: target, now: now) }
        return try BackupFiles.withLock(lock, shared: true) { try restore(folder, into: target, now: now) }
    }

    private static func restore(_ folder: URL, into target: EmbeddedDataDirectory, now: Date) throws -> BackupManifest {
        let manifest = try BackupManifest.read(from: folder)
        guard manifest.files.contains(where: { $0.name == target.database.lastPathComponent }) else {
            throw BackupError(.damaged, "the manifest of \(folder.path) lists no \(target.database.lastPathComponent)")
        }
        try requireEmpty(target.url)
        let parent = target.url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        let staging = parent.appendingPathComponent(".restoring-\(target.url.lastPathComponent)-\(Secrets.apiToken().prefix(8))")
        try BackupFiles.makePrivateFolder(staging)
        do {
            for file in manifest.files {
                try copyChecked(file, from: folder, to: staging)
            }
            let blobs = EmbeddedDataDirectory(staging).blobs
            try BackupFiles.makePrivateFolder(blobs)
            let sharedBlobs = folder.deletingLastPathComponent().appendingPathComponent(EmbeddedBackup.blobFolder)
            for blob in manifest.blobs {
                try copyChecked(blob, from: sharedBlobs, to: blobs)
            }
            try BackupFiles.synchronizeFolder(blobs)
            try startEpoch(EmbeddedDataDirectory(staging).database, backup: manifest.id, now: now)
            try BackupFiles.synchronizeFolder(staging)
            // rename(2) replaces only an empty folder: a target that filled up meanwhile (a server started on
            // it, say) makes it fail, and nothing there is touched.
            guard rename(staging.path, target.url.path) == 0 else {
                guard errno == ENOTEMPTY || errno == EEXIST || errno == ENOTDIR else {
                    throw BackupFiles.posixError("cannot rename \(staging.path)")
                }
                throw BackupError(.targetNotEmpty, "\(target.url.path) filled up during the restore; nothing there was changed")
            }
            try BackupFiles.synchronizeFolder(parent)
            return manifest
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
    }

    /// `source` when it is one backup's folder, else the newest backup in it. The newest is taken even
    /// when it is damaged (and then refused): restoring an older one without being asked would lose more.
    static func backupFolder(_ source: URL) throws -> URL {
        if FileManager.default.fileExists(atPath: source.appendingPathComponent(BackupManifest.fileName).path)
            || source.lastPathComponent.hasPrefix(EmbeddedBackup.namePrefix)
        {
            guard FileManager.default.fileExists(atPath: source.path) else {
                throw BackupError(.notFound, "there is no backup at \(source.path)")
            }
            return source
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: source.path)) ?? []
        guard let newest = names.filter({ $0.hasPrefix(EmbeddedBackup.namePrefix) }).max() else {
            let partial = names.contains { $0.hasPrefix(EmbeddedBackup.partialPrefix) }
            throw BackupError(
                partial ? .incomplete : .notFound,
                partial ? "\(source.path) holds only a backup that did not finish" : "there is no backup in \(source.path)")
        }
        return source.appendingPathComponent(newest)
    }

    /// A target that does not exist is fine, an empty folder too; anything else (a file, a folder with
    /// something in it or that cannot be read) is refused.
    private static func requireEmpty(_ target: URL) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: target.path, isDirectory: &isFolder) else { return }
        guard isFolder.boolValue, let names = try? FileManager.default.contentsOfDirectory(atPath: target.path), names.isEmpty
        else {
            throw BackupError(.targetNotEmpty, "\(target.path) is not an empty folder; restore into a new data directory")
        }
    }

    private static func copyChecked(_ file: BackupManifest.File, from source: URL, to target: URL) throws {
        // Names come from the manifest: only plain names, never a path out of the folder.
        guard !file.name.isEmpty, !file.name.contains("/"), !file.name.hasPrefix(".") else {
            throw BackupError(.damaged, "the manifest names a file \(file.name.debugDescription), which no backup writes")
        }
        let from = source.appendingPathComponent(file.name)
        guard FileManager.default.fileExists(atPath: from.path) else {
            throw BackupError(.incomplete, "\(from.path) is missing from the backup")
        }
        let (size, sha256) = try BackupFiles.copy(from, to: target.appendingPathComponent(file.name))
        guard size == file.size, sha256 == file.sha256 else {
            throw BackupError(
                .damaged,
                "\(from.path) differs from the manifest (\(size) bytes, SHA-256 \(sha256); expected \(file.size), \(file.sha256))"
            )
        }
    }

    /// Checks the copied database, migrates it when the backup is older, and records the restore.
    private static func startEpoch(_ database: URL, backup: String, now: Date) throws {
        do {
            let queue = try DatabaseQueue(path: database.path)
            let result = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            try queue.close()
            guard result == ["ok"] else {
                throw BackupError(
                    .damaged, "the backup's database fails SQLite's integrity check: \(result.prefix(5).joined(separator: "; "))")
            }
        } catch let error as DatabaseError {
            throw BackupError(.damaged, "the backup's database cannot be read: \(error.message ?? "\(error)")")
        }
        try SQLiteStore(path: database.path).startEpoch(restoring: backup, at: now)
    }
}

extension SQLiteStore {
    /// Records a restore: zones and service sequences enter a new epoch, remembering the backup's epoch and
    /// where the backup left them.
    func startEpoch(restoring backup: String, at date: Date) throws {
        try pool.write { db in
            var epoch: Int64
            repeat {
                epoch = Int64.random(in: 1...(Int64.max >> 1))
            } while try Int.fetchOne(db, sql: "SELECT count(*) FROM restores WHERE epoch = ?", arguments: [epoch]) != 0
            try db.execute(
                sql: "INSERT INTO restores (epoch, backup, restored_at) VALUES (?, ?, ?)",
                arguments: [epoch, backup, date.milliseconds])
            // SET reads the row as it was: the epoch the backup left becomes the previous one.
            for table in ["zones", "service_sequences"] {
                try db.execute(
                    sql: "UPDATE \(table) SET previous_epoch = epoch, epoch = ?, restored_sequence = sequence", arguments: [epoch]
                )
            }
        }
        _ = try pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
    }
}
