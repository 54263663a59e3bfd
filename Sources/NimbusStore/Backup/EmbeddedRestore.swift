import Foundation
import GRDB
import NimbusCore

/// Restores a backup (`EmbeddedBackup`) into a new data directory, checking every byte against the
/// manifest first: a backup that did not finish, lacks a file, or differs from its manifest anywhere is
/// refused, and the target is left as it was.
package enum EmbeddedRestore {
    /// Restores `source` (a destination's newest backup, or one backup's folder) into `target`, which must
    /// not exist or be empty, and its blobs into `blobs` (by default the target's folder). The restored
    /// database starts a new epoch (`SequenceHistory`): clients' tokens from after the backup are answered as
    /// expired, so they resync rather than miss changes.
    @discardableResult
    package static func restore(
        from source: URL, into target: EmbeddedDataDirectory, blobs: (any BlobStore)? = nil, now: Date = Date()
    ) async throws -> BackupManifest {
        try await BackupDestination.reading(source) { folder in try await restore(folder, into: target, blobs: blobs, now: now) }
    }

    private static func restore(
        _ folder: URL, into target: EmbeddedDataDirectory, blobs: (any BlobStore)?, now: Date
    ) async throws -> BackupManifest {
        let manifest = try BackupManifest.read(from: folder)
        guard manifest.holds == .sqlite else {
            throw BackupError(
                .wrongKind,
                "\(folder.path) is a backup of a PostgreSQL deployment: restore it with --database, into an empty database")
        }
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
                try BackupFiles.copyChecked(file, from: folder, to: staging)
            }
            // Into the target's folder (with it, once renamed), or into the bucket its server will use.
            let store = try blobs ?? LocalBlobStore(directory: EmbeddedDataDirectory(staging).blobs)
            try await BackupBlobs.restore(
                manifest.blobs, from: BackupDestination(folder.deletingLastPathComponent()), into: store)
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
