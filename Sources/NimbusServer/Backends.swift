import Foundation
import Logging
import NimbusPostgres
import NimbusStore

/// The stores a server runs on, made from its configuration in one place: the only code that names a
/// backend, so another (PostgreSQL, S3-compatible blobs) is one more case here.
struct Backends: Sendable {
    let store: any Store
    let blobs: any BlobStore

    static func make(_ configuration: ServerConfiguration, logger: Logger) async throws -> Backends {
        switch configuration.storage {
        case .embedded:
            // Opening SQLite (migrations, synced writes) blocks its thread: not one of Swift's few.
            return try await BlockingWork.run { try embedded(configuration, logger: logger) }
        case .postgres(let location, let connections):
            guard configuration.backupInterval == nil else {
                throw StoreConfigurationError(
                    "scheduled backups (--backup-every) copy the embedded database; with PostgreSQL, back up with its own "
                        + "tools (pg_basebackup and WAL archiving, or pg_dump) and copy the data directory's blobs")
            }
            try FileManager.default.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true)
            let store = try await PostgresStore.open(location, connections: connections, logger: logger) { pending in
                logger.notice("migrating the database", metadata: ["migrations": .array(pending.map { .string($0) })])
            }
            return Backends(store: store, blobs: try LocalBlobStore(directory: configuration.blobDirectory))
        }
    }

    private static func embedded(_ configuration: ServerConfiguration, logger: Logger) throws -> Backends {
        // One data directory: the SQLite database and a directory of blobs.
        try FileManager.default.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true)
        let data = EmbeddedDataDirectory(configuration.dataDirectory)
        if let migration = data.migration {
            throw StoreConfigurationError(
                "this data directory's database was \(migration); run the server with --database on that database, or, "
                    + "to go back to SQLite and lose what was written to PostgreSQL since, delete \(data.migratedMarker.path)")
        }
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

/// A server configuration that cannot work, in words the operator can act on.
package struct StoreConfigurationError: Error, CustomStringConvertible {
    package var description: String

    init(_ description: String) { self.description = description }
}
