import ArgumentParser
import Foundation
import NimbusServer
import NimbusStore

struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Back up a data directory, also while a server runs on it.",
        discussion: """
            The database is copied as of one instant; blobs are kept once in DEST/blobs, so a later backup copies \
            only new ones. Each backup is a folder DEST/backup-<time> with a manifest of sizes and SHA-256s.
            """)

    @Option(help: "The data directory to back up. [env: NIMBUS_DATA]")
    var data: String = Environment.string("NIMBUS_DATA") ?? "nimbus-data"

    @Option(help: "Where backups are kept.")
    var to: String

    @Option(help: "Keep only the newest N backups in the destination (older ones and their blobs are deleted).")
    var keep: Int?

    @OptionGroup var embedded: EmbeddedDataOnly

    func validate() throws {
        if let keep, keep < 1 { throw ValidationError("--keep must be at least 1") }
    }

    func run() throws {
        try embedded.refusePostgres(
            "backup",
            instead: """
                back the database up with PostgreSQL's own tools (pg_dump --format=custom, or pg_basebackup with WAL \
                archiving for point-in-time recovery), then copy the data directory's blobs/ and url-signing.key
                """)
        try embedded.refuseRemoteBlobs("backup", data: data)
        let destination = URL(fileURLWithPath: to)
        let manifest: BackupManifest
        do {
            manifest = try EmbeddedBackup.create(
                of: EmbeddedDataDirectory(URL(fileURLWithPath: data)), to: destination, keep: keep)
        } catch {
            fail(error)
        }
        let counts = manifest.counts
        print(
            "Backed up \(counts.accounts) accounts, \(counts.zones) zones, \(counts.entries) entries and \(counts.blobs) blobs (\(counts.blobBytes) bytes) to \(destination.appendingPathComponent(manifest.id).path)"
        )
    }
}

struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a backup into a new data directory, after checking every file against its manifest.",
        discussion: """
            --from names a destination (its newest backup is restored) or one backup's folder. A backup that did \
            not finish, lacks a file or differs from its manifest is refused. Devices whose change tokens are newer \
            than the backup are told to fetch everything again.
            """)

    @Option(help: "A backup destination, or one backup's folder in it.")
    var from: String

    @Option(help: "The new data directory (must not exist, or be empty).")
    var data: String

    @OptionGroup var embedded: EmbeddedDataOnly

    func run() throws {
        try embedded.refusePostgres(
            "restore",
            instead: """
                restore the database with PostgreSQL's own tools (pg_restore, or a base backup and its WAL), then put the \
                copied blobs/ and url-signing.key back into the data directory
                """)
        let manifest: BackupManifest
        do {
            manifest = try EmbeddedRestore.restore(
                from: URL(fileURLWithPath: from), into: EmbeddedDataDirectory(URL(fileURLWithPath: data)))
        } catch {
            fail(error)
        }
        print(
            "Restored \(manifest.id) (taken \(manifest.createdAt)) into \(data): \(manifest.counts.entries) entries, \(manifest.counts.blobs) blobs"
        )
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a data directory without changing it; exits 1 if anything is wrong.",
        discussion: """
            SQLite's integrity and foreign key checks; each zone's change sequence and counters against its entries; \
            index rows against the entries they belong to; every blob a live record or document names, present \
            and matching its hash, read from the data directory or, for a server that keeps its blobs in a bucket, \
            from the bucket the --blobs options name (as given to serve).
            """)

    @Option(help: "The data directory to check. [env: NIMBUS_DATA]")
    var data: String = Environment.string("NIMBUS_DATA") ?? "nimbus-data"

    @OptionGroup var embedded: EmbeddedDataOnly
    @OptionGroup var blobStore: BlobOptions

    func run() async throws {
        try embedded.refusePostgres(
            "check",
            instead: """
                checking a PostgreSQL deployment's zones and blobs is not built yet; PostgreSQL checks its own pages \
                (initdb --data-checksums, the amcheck extension)
                """)
        let directory = URL(fileURLWithPath: data)
        let blobs = try blobStore.store(reading: EmbeddedDataDirectory(directory))
        let report: CheckReport
        do {
            report = try await DataCheck.run(dataDirectory: directory, blobs: blobs)
        } catch {
            fail(error)
        }
        for line in report.checked { print("checked \(line)") }
        for problem in report.problems { print("PROBLEM \(problem)") }
        print(report.isHealthy ? "ok: \(data) is consistent" : "\(report.problems.count) problems in \(data)")
        if !report.isHealthy { throw ExitCode(1) }
    }
}
