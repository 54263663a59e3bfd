import Foundation
import Logging
import NimbusStore

/// The stores a server runs on, made from its configuration in one place: the only code that names a
/// backend, so another (PostgreSQL, S3-compatible blobs) is one more case here.
struct Backends: Sendable {
    let store: any Store
    let blobs: any BlobStore

    static func make(_ configuration: ServerConfiguration, logger: Logger) throws -> Backends {
        switch configuration.storage {
        case .embedded:
            // One data directory: the SQLite database and a directory of blobs.
            try FileManager.default.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true)
            let data = EmbeddedDataDirectory(configuration.dataDirectory)
            let store = try SQLiteStore(path: configuration.databasePath) { pending, rewritesData in
                if rewritesData {
                    // A migration that rewrites rows cannot be undone by an older binary: keep the data as it was.
                    // A folder of its own, which scheduled backups' rotation leaves alone: the one an older binary can open.
                    let destination =
                        configuration.backupDirectory?.appendingPathComponent("before-migrations") ?? data.migrationBackups
                    let backup = try EmbeddedBackup.create(of: data, to: destination)
                    logger.notice(
                        "backed up the data before a migration that rewrites it",
                        metadata: ["backup": .string(destination.appendingPathComponent(backup.id).path)])
                }
                logger.notice("migrating the database", metadata: ["migrations": .array(pending.map { .string($0) })])
            }
            return Backends(store: store, blobs: try LocalBlobStore(directory: configuration.blobDirectory))
        }
    }
}
