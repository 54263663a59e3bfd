import ArgumentParser
import Foundation
import NimbusPostgres
import NimbusStore

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a single-node install into an empty PostgreSQL database, and verify the copy.",
        discussion: """
            Stop `nimbus serve` on the data directory first. Every row is copied as it is, so devices and apps go on \
            without signing in again. The copy is committed only once every table, and every zone's entries and \
            index rows, read back with the source's counts and checksums; a source that changes meanwhile, or a \
            target that already holds data, is refused and nothing is copied. Blobs and url-signing.key stay in the \
            data directory: run the nodes with --data on it (or on a copy of those) and --database. The data \
            directory is marked as migrated, so `nimbus serve` no longer runs on its SQLite database by mistake.
            """)

    @Option(help: "The data directory to copy.")
    var from: String

    @Option(help: "The PostgreSQL database to copy into, like postgres://nimbus:PASSWORD@db.example.com/nimbus.")
    var to: String

    func run() async throws {
        let data = EmbeddedDataDirectory(URL(fileURLWithPath: from))
        let location: PostgresLocation
        do {
            location = try PostgresLocation(url: to)
        } catch let error as PostgresLocation.InvalidURL {
            throw ValidationError("--to: \(error.description)")
        }
        let report: EmbeddedToPostgres.Report
        do {
            let target = try await PostgresStore.open(location, connections: 2)
            defer { target.close() }
            report = try await EmbeddedToPostgres.copy(from: data.database.path, to: target) { step in
                FileHandle.standardError.write(Data("\(step)\n".utf8))
            }
            try data.markMigrated(to: "\(location)")
        } catch {
            fail(error)
        }
        let rows = report.tables.reduce(0) { $0 + $1.rows }
        print(
            "Copied and verified \(rows) rows in \(report.tables.count) tables (\(report.zones) zones) into \(location). Run the nodes with --data \(from) --database <the URL>."
        )
    }
}
