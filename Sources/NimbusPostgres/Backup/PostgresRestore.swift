import Foundation
import NimbusCore
import NimbusStore
import PostgresNIO

/// Restores a PostgreSQL deployment's backup (`PostgresBackup`) into an empty database and a blob store,
/// checking every byte against the manifest first: a backup that did not finish, lacks a file or differs
/// from its manifest is refused before the database is touched.
///
/// Blobs go first (a damaged one stops the restore while the database is still empty; those written
/// before it are unnamed, and a sweep collects them), then `pg_restore` loads the dump in one transaction,
/// then the database is migrated if the backup is older and starts a new epoch, as an embedded restore does.
package enum PostgresRestore {
    /// Restores `source` (a destination's newest backup, or one backup's folder) into the empty database
    /// at `location` and into `blobs`; the backup's other files (`url-signing.key`) go into `files`, which
    /// must not hold different ones.
    @discardableResult
    package static func restore(
        from source: URL, into location: PostgresLocation, blobs: any BlobStore, files: URL,
        programs: PostgresPrograms = PostgresPrograms(), now: Date = Date()
    ) async throws -> BackupManifest {
        try await BackupDestination.reading(source) { folder in
            let manifest = try BackupManifest.read(from: folder)
            guard manifest.holds == .postgresql else {
                throw BackupError(
                    .wrongKind,
                    "\(folder.path) is a backup of an embedded data directory: restore it without --database, then copy it "
                        + "into PostgreSQL with nimbus migrate")
            }
            guard let dump = manifest.files.first(where: { $0.name == PostgresBackup.dumpName }) else {
                throw BackupError(.damaged, "the manifest of \(folder.path) lists no \(PostgresBackup.dumpName)")
            }
            try BackupFiles.check(dump, in: folder)
            let others = manifest.files.filter { $0.name != PostgresBackup.dumpName }
            for file in others { try BackupFiles.check(file, in: folder) }
            try requireNoOtherFiles(others, in: files)

            let store = try await PostgresStore.connect(location, connections: 2)
            defer { store.close() }
            try await store.requireEmpty()
            try await BackupBlobs.restore(
                manifest.blobs, from: BackupDestination(folder.deletingLastPathComponent()), into: blobs)
            let (server, dumpFile) = (store.servers.current, folder.appendingPathComponent(dump.name))
            try await programs.run(
                "pg_restore",
                [
                    "--exit-on-error", "--single-transaction", "--no-owner", "--no-privileges",
                    "--dbname=\(location.connectionString(server))", dumpFile.path,
                ], for: location)
            // An older backup is brought up to this Nimbus's schema before its epoch starts.
            let restored = try await PostgresStore.open(location, connections: 2)
            defer { restored.close() }
            try await restored.startEpoch(restoring: manifest.id, at: now)
            try BackupFiles.makePrivateFolder(files)
            for file in others where !FileManager.default.fileExists(atPath: files.appendingPathComponent(file.name).path) {
                try BackupFiles.copyChecked(file, from: folder, to: files)
            }
            return manifest
        }
    }

    /// Refuses a folder that holds one of `others` with other bytes (a node's own `url-signing.key`, which
    /// would sign URLs the restored nodes do not accept).
    private static func requireNoOtherFiles(_ others: [BackupManifest.File], in folder: URL) throws {
        for file in others {
            let existing = folder.appendingPathComponent(file.name)
            guard FileManager.default.fileExists(atPath: existing.path) else { continue }
            guard try BackupFiles.digest(existing).sha256 == file.sha256 else {
                throw BackupError(
                    .targetNotEmpty, "\(existing.path) differs from the backup's; restore into a data directory without one")
            }
        }
    }
}

extension PostgresStore {
    /// Refuses a database that holds tables: a restore goes into a new, empty one.
    func requireEmpty() async throws {
        let tables = try await rows(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')"
        ).value(Int64.self)
        guard tables == 0 else {
            throw BackupError(.targetNotEmpty, "the database holds \(tables ?? 0) tables; restore into a new, empty database")
        }
    }

    /// Records a restore: zones and service sequences enter a new epoch, remembering the backup's epoch and
    /// where the backup left them, so clients' tokens from after the backup are answered as expired.
    package func startEpoch(restoring backup: String, at date: Date) async throws {
        try await transaction { connection in
            var epoch: Int64
            repeat {
                epoch = Int64.random(in: 1...(Int64.max >> 1))
            } while try await connection.run("SELECT count(*) FROM restores WHERE epoch = \(epoch)").value(Int64.self) != 0
            try await connection.run(
                "INSERT INTO restores (epoch, backup, restored_at) VALUES (\(epoch), \(backup), \(date.milliseconds))")
            // SET reads the row as it was: the epoch the backup left becomes the previous one.
            try await connection.run(
                "UPDATE zones SET previous_epoch = epoch, epoch = \(epoch), restored_sequence = sequence")
            try await connection.run(
                "UPDATE service_sequences SET previous_epoch = epoch, epoch = \(epoch), restored_sequence = sequence")
        }
    }
}
