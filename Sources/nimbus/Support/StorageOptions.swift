import ArgumentParser
import NimbusPostgres
import NimbusServer

/// Where a server keeps its data besides blobs: the embedded SQLite database by default, or a PostgreSQL
/// database that several nodes share.
struct StorageOptions: ParsableArguments {
    @Option(
        help: """
            A PostgreSQL database to keep the data in, shared by every node, like \
            postgres://nimbus:PASSWORD@db.example.com:5432/nimbus?sslmode=require; by default the embedded SQLite \
            database in the data directory. Blobs are kept apart (--blobs). [env: NIMBUS_DATABASE]
            """)
    var database: String? = Environment.string("NIMBUS_DATABASE")

    @Option(help: "Most connections this node opens to PostgreSQL. [env: NIMBUS_DATABASE_CONNECTIONS]")
    var databaseConnections: Int = Environment.int("NIMBUS_DATABASE_CONNECTIONS") ?? 20

    func storage() throws -> Storage {
        guard let database else { return .embedded }
        guard (2...1000).contains(databaseConnections) else {
            throw ValidationError("--database-connections must be between 2 and 1000")
        }
        do {
            return .postgres(try PostgresLocation(url: database), connections: databaseConnections)
        } catch let error as PostgresLocation.InvalidURL {
            throw ValidationError("--database: \(error.description)")
        }
    }
}
