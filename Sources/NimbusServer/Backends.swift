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
            let data = EmbeddedDataDirectory(configuration.dataDirectory)
            if let migration = data.migration {
                throw StoreConfigurationError(
                    "this data directory's database was \(migration); run the server with --database on that database, or, "
                        + "to go back to SQLite and lose what was written to PostgreSQL since, delete \(data.migratedMarker.path)"
                )
            }
            try FileManager.default.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true)
            // One process uses the bucket: it decides alone, and keeps its sweeps from `nimbus backup` by the lock
            // file a blob folder would have.
            let blobs = try await blobs(configuration, decisions: ProcessDecisionLock(sweepGate: data.blobSweepGate))
            try await backUpBeforeRewritingData(configuration, blobs: blobs, logger: logger)
            // Opening SQLite (migrations, synced writes) blocks its thread: not one of Swift's few.
            let store = try await BlockingWork.run { try embedded(configuration, logger: logger) }
            return Backends(store: store, blobs: blobs)
        case .postgres(let location, let connections):
            guard configuration.backupInterval == nil else {
                throw StoreConfigurationError(
                    "scheduled backups (--backup-every) copy the embedded database; with PostgreSQL, run nimbus backup "
                        + "--database on a schedule (it dumps the database and copies the blobs), or use PostgreSQL's own "
                        + "continuous archiving and the bucket's versioning")
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

    /// Backs the data up before a migration that rewrites rows, which an older binary cannot undo: the copy is
    /// the one an older binary can open. In a folder of its own, which scheduled backups' rotation leaves alone.
    private static func backUpBeforeRewritingData(
        _ configuration: ServerConfiguration, blobs: any BlobStore, logger: Logger
    ) async throws {
        let path = configuration.databasePath
        guard try await BlockingWork.run({ try SQLiteStore.pendingMigrations(at: path)?.rewritesData }) == true else {
            return
        }
        let data = EmbeddedDataDirectory(configuration.dataDirectory)
        let destination = configuration.backupDirectory?.appendingPathComponent("before-migrations") ?? data.migrationBackups
        let backup = try await EmbeddedBackup.create(of: data, blobs: blobs, to: destination)
        logger.notice(
            "backed up the data before a migration that rewrites it",
            metadata: ["backup": .string(destination.appendingPathComponent(backup.id).path)])
    }

    private static func embedded(_ configuration: ServerConfiguration, logger: Logger) throws -> SQLiteStore {
        try SQLiteStore(path: configuration.databasePath) { pending, _ in
            logger.notice("migrating the database", metadata: ["migrations": .array(pending.map { .string($0) })])
        }
    }
}

/// A server configuration that cannot work, in words the operator can act on.
package struct StoreConfigurationError: Error, CustomStringConvertible {
    package var description: String

    init(_ description: String) { self.description = description }
}
