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
            let store = try await BlockingWork.run { try embedded(configuration, logger: logger) }
            // One process uses the bucket: a lock of its own decides.
            return Backends(store: store, blobs: try await blobs(configuration, decisions: ProcessDecisionLock()))
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
            return Backends(store: store, blobs: try await blobs(configuration, decisions: PostgresDecisionLock(store: store)))
        }
    }

    /// The blob store: the data directory's folder, or a bucket checked at once (a wrong endpoint, secret or
    /// bucket is said at start, not at the first upload), with the data directory marked as holding no blobs.
    private static func blobs(_ configuration: ServerConfiguration, decisions: any BlobDecisionLock) async throws
        -> any BlobStore
    {
        switch configuration.blobs {
        case .dataDirectory:
            return try LocalBlobStore(directory: configuration.blobDirectory)
        case .s3(let location):
            guard configuration.backupInterval == nil else {
                throw StoreConfigurationError(
                    "scheduled backups (--backup-every) copy the data directory's blobs, and these are in s3://\(location.bucket); "
                        + "keep the bucket's versioning or replication for them instead")
            }
            let client = S3Client(location)
            do {
                _ = try await client.list(maxKeys: 1)
            } catch let error as S3Error {
                throw StoreConfigurationError(
                    "the blob bucket s3://\(location.bucket) at \(location.endpoint) cannot be used: \(error)")
            }
            let data = EmbeddedDataDirectory(configuration.dataDirectory)
            try Data("s3://\(location.bucket)/\(location.prefix) at \(location.endpoint)\n".utf8).write(
                to: data.remoteBlobsMarker, options: .atomic)
            return S3BlobStore(client: client, decisions: decisions)
        }
    }

    private static func embedded(_ configuration: ServerConfiguration, logger: Logger) throws -> SQLiteStore {
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
        return store
    }
}

/// A server configuration that cannot work, in words the operator can act on.
package struct StoreConfigurationError: Error, CustomStringConvertible {
    package var description: String

    init(_ description: String) { self.description = description }
}
