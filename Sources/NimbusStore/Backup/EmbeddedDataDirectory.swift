import Foundation

/// The files of an embedded data directory, named in one place: the server opens them, backups copy them.
package struct EmbeddedDataDirectory: Sendable {
    package let url: URL

    package init(_ url: URL) { self.url = url }

    package var database: URL { url.appendingPathComponent("nimbus.sqlite") }
    package var blobs: URL { url.appendingPathComponent("blobs") }
    /// The key that signs asset download URLs, created on first start.
    package var urlSigningKey: URL { url.appendingPathComponent("url-signing.key") }
    /// Where backups taken before a migration go when no other place is configured.
    package var migrationBackups: URL { url.appendingPathComponent("backups") }

    /// Written by `nimbus migrate` once the database is copied into PostgreSQL: a server started on the
    /// SQLite database after that would serve data that stopped changing, and split it from the copy.
    package var migratedMarker: URL { url.appendingPathComponent("MIGRATED-TO-POSTGRESQL") }

    /// Marks the database as copied into `target` (in words, without a password).
    package func markMigrated(to target: String) throws {
        try Data("copied by nimbus migrate on \(Date()) into \(target)\n".utf8).write(to: migratedMarker, options: .atomic)
    }

    /// What the marker says, when the database was migrated.
    package var migration: String? {
        (try? String(contentsOf: migratedMarker, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Written by a server that keeps its blobs in an object store (`--blobs s3://…`): this directory then
    /// holds the database without the blobs it names, which `nimbus backup`, `check` and `restore` refuse.
    package var remoteBlobsMarker: URL { url.appendingPathComponent("BLOBS-ELSEWHERE") }

    /// Where the blobs are, in words (a bucket and endpoint, never a secret), when not in `blobs/`.
    package var remoteBlobs: String? {
        (try? String(contentsOf: remoteBlobsMarker, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The lock file that keeps the server's blob sweeps from a backup's copying, wherever the blobs are
    /// (`LocalBlobStore.sweepLock(for:)`, beside the blob folder).
    package var blobSweepGate: URL { LocalBlobStore.sweepLock(for: blobs) }

    /// Files other than the database and blobs a backup carries.
    var otherFiles: [URL] { [urlSigningKey] }
}
