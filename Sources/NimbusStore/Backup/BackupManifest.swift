import Foundation

/// What one backup holds, written last (so a backup without one is incomplete) and checked by restore:
/// every file's size and SHA-256, the migrations the database had, and counts a person can compare.
package struct BackupManifest: Codable, Sendable, Equatable {
    /// The manifest's own format; a restore refuses one it does not know.
    package static let currentFormat = 1
    package static let fileName = "manifest.json"

    package struct File: Codable, Sendable, Hashable {
        package var name: String
        package var size: Int64
        /// Lowercase hexadecimal.
        package var sha256: String

        package init(name: String, size: Int64, sha256: String) {
            self.name = name
            self.size = size
            self.sha256 = sha256
        }
    }

    package struct Counts: Codable, Sendable, Hashable {
        package var accounts: Int
        package var zones: Int
        /// Live entries: key-value pairs, records, document items and versions.
        package var entries: Int
        package var blobs: Int
        package var blobBytes: Int64

        package init(accounts: Int, zones: Int, entries: Int, blobs: Int, blobBytes: Int64) {
            self.accounts = accounts
            self.zones = zones
            self.entries = entries
            self.blobs = blobs
            self.blobBytes = blobBytes
        }
    }

    /// The database a backup holds a copy of.
    package enum Database: String, Codable, Sendable {
        /// An embedded data directory's `nimbus.sqlite`.
        case sqlite
        /// A PostgreSQL database's `pg_dump` (`database.dump`, its custom format).
        case postgresql
    }

    package var format: Int
    package var id: String
    package var createdAt: Date
    /// Absent from backups written before PostgreSQL ones were: those are SQLite's.
    package var database: Database?
    /// The database's applied migrations: a newer Nimbus restores an older backup and migrates it.
    package var migrations: [String]
    /// The database (`nimbus.sqlite`) and the other files of the data directory, in the backup's folder.
    package var files: [File]
    /// Blobs, in the destination's shared `blobs` folder: named by id, so a later backup copies only new ones.
    package var blobs: [File]
    package var counts: Counts

    /// The database the backup holds a copy of.
    package var holds: Database { database ?? .sqlite }

    package static func read(from folder: URL) throws -> BackupManifest {
        let url = folder.appendingPathComponent(fileName)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw BackupError(.incomplete, "\(folder.path) has no \(fileName): the backup did not finish")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let manifest: BackupManifest
        do {
            manifest = try decoder.decode(BackupManifest.self, from: data)
        } catch {
            throw BackupError(.damaged, "\(url.path) is not a backup manifest (\(error))")
        }
        guard manifest.format == currentFormat else {
            throw BackupError(
                .unsupported, "\(url.path) has format \(manifest.format); this Nimbus reads format \(currentFormat)")
        }
        guard manifest.id == folder.lastPathComponent else {
            throw BackupError(.damaged, "\(url.path) describes backup \(manifest.id), not \(folder.lastPathComponent)")
        }
        return manifest
    }

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }
}

extension BackupManifest {
    /// A new backup's manifest, its counts those of `blobs` until the database's are read.
    package init(id: String, createdAt: Date, database: Database, files: [File], blobs: [File]) {
        format = Self.currentFormat
        self.id = id
        self.createdAt = createdAt
        self.database = database
        migrations = []
        self.files = files
        self.blobs = blobs
        counts = Counts(accounts: 0, zones: 0, entries: 0, blobs: blobs.count, blobBytes: blobs.reduce(0) { $0 + $1.size })
    }
}

/// Why a backup, restore or check could not be done: a stable code and what to do about it.
package struct BackupError: Error, CustomStringConvertible, Equatable {
    package enum Code: String, Sendable {
        /// No backup at the place named, or no data directory to back up.
        case notFound = "BACKUP_NOT_FOUND"
        /// A backup that did not finish (no manifest), or a file the manifest lists is missing.
        case incomplete = "BACKUP_INCOMPLETE"
        /// A file whose size or SHA-256 differs from the manifest's, or a manifest that does not parse.
        case damaged = "BACKUP_DAMAGED"
        /// A manifest of a format this version does not read.
        case unsupported = "BACKUP_UNSUPPORTED"
        /// Restoring into a data directory that holds something.
        case targetNotEmpty = "RESTORE_TARGET_NOT_EMPTY"
        /// A backup of the other kind of database than the restore's target (PostgreSQL's into a data directory).
        case wrongKind = "BACKUP_WRONG_KIND"
        /// Backing up into the data directory itself (its blobs would be the backups').
        case invalidDestination = "BACKUP_DESTINATION_INVALID"
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code.rawValue): \(message)" }
}
