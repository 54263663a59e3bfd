import ArgumentParser
import Foundation
import NimbusPostgres
import NimbusServer
import NimbusStore

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Back up a deployment, also while its servers run.",
        discussion: """
            The database is copied as of one instant: an embedded data directory's SQLite database, or, with \
            --database, PostgreSQL's (pg_dump, of one snapshot). Blobs are kept once in DEST/blobs, so a later backup \
            copies only new ones; they are read from the data directory's blob folder, or from the bucket its servers \
            keep them in (the --blobs options, as given to serve). With --database, --data names a node's data \
            directory. Each backup is a folder DEST/backup-<time> with a manifest of sizes and SHA-256s.
            """)

    @Option(help: "The data directory to back up (with --database, a node's). [env: NIMBUS_DATA]")
    var data: String = Environment.string("NIMBUS_DATA") ?? "nimbus-data"

    @Option(help: "Where backups are kept.")
    var to: String

    @Option(help: "Keep only the newest N backups in the destination (older ones and their blobs are deleted).")
    var keep: Int?

    @OptionGroup var deployment: DeploymentDatabase
    @OptionGroup var blobStore: BlobOptions

    func validate() throws {
        if let keep, keep < 1 { throw ValidationError("--keep must be at least 1") }
    }

    func run() async throws {
        let destination = URL(fileURLWithPath: to)
        let directory = EmbeddedDataDirectory(URL(fileURLWithPath: data))
        let manifest: BackupManifest
        if let location = try deployment.location() {
            manifest = try await backUp(location, directory: directory, to: destination)
        } else {
            let blobs = try blobStore.store(reading: directory)
            do {
                manifest = try await EmbeddedBackup.create(of: directory, blobs: blobs, to: destination, keep: keep)
            } catch {
                fail(error)
            }
        }
        let counts = manifest.counts
        print(
            "Backed up \(counts.accounts) accounts, \(counts.zones) zones, \(counts.entries) entries and \(counts.blobs) blobs (\(counts.blobBytes) bytes) to \(destination.appendingPathComponent(manifest.id).path)"
        )
    }

    private func backUp(_ location: PostgresLocation, directory: EmbeddedDataDirectory, to destination: URL) async throws
        -> BackupManifest
    {
        // A node's data directory holds the key its URLs are signed with, which restored nodes need.
        guard FileManager.default.fileExists(atPath: directory.urlSigningKey.path) else {
            throw CLIError(
                "\(data) is not a node's data directory (it has no \(directory.urlSigningKey.lastPathComponent)): name one "
                    + "with --data, whose blobs (or the bucket named with --blobs) are the deployment's")
        }
        do {
            let store = try await PostgresStore.connect(location, connections: 4)
            defer { store.close() }
            let blobs = try blobStore.store(reading: directory, decisions: PostgresDecisionLock(store: store))
            return try await PostgresBackup.create(
                of: store, blobs: blobs, otherFiles: [directory.urlSigningKey], to: destination, keep: keep)
        } catch let error as CLIError {
            throw error
        } catch StoreError.unavailable {
            fail(CLIError("the database \(location) cannot be reached; nothing was backed up"))
        } catch {
            fail(error)
        }
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a backup, after checking every file against its manifest.",
        discussion: """
            --from names a destination (its newest backup is restored) or one backup's folder. A backup that did \
            not finish, lacks a file or differs from its manifest is refused. An embedded backup is restored into a \
            new data directory, a PostgreSQL deployment's into a new, empty database (--database); the blobs go into the \
            data directory or the bucket the --blobs options name, the url-signing.key into --data. Devices whose \
            change tokens are newer than the backup are told to fetch everything again.
            """)

    @Option(help: "A backup destination, or one backup's folder in it.")
    var from: String

    @Option(help: "The new data directory (must not exist, or be empty; with --database, a node's).")
    var data: String

    @OptionGroup var deployment: DeploymentDatabase
    @OptionGroup var blobStore: BlobOptions

    func run() async throws {
        let source = URL(fileURLWithPath: from)
        let directory = EmbeddedDataDirectory(URL(fileURLWithPath: data))
        let manifest: BackupManifest
        do {
            let bucket = try blobStore.bucket(restoringInto: directory)
            if let location = try deployment.location() {
                let blobs = try bucket ?? LocalBlobStore(directory: directory.blobs, creating: false)
                manifest = try await PostgresRestore.restore(from: source, into: location, blobs: blobs, files: directory.url)
            } else {
                manifest = try await EmbeddedRestore.restore(from: source, into: directory, blobs: bucket)
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            fail(error)
        }
        print(
            "Restored \(manifest.id) (taken \(manifest.createdAt)) into \(deployment.database.map { _ in "the database" } ?? data): \(manifest.counts.entries) entries, \(manifest.counts.blobs) blobs"
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

    @OptionGroup var deployment: DeploymentDatabase
    @OptionGroup var blobStore: BlobOptions

    func run() async throws {
        try deployment.refusePostgres(
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
