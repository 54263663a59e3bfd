import ArgumentParser
import Foundation
import NimbusPostgres
import NimbusStore

/// The PostgreSQL database a deployment keeps its data in, for `nimbus backup`, `restore` and `check`, which
/// otherwise work on an embedded data directory.
struct DeploymentDatabase: ParsableArguments {
    @Option(help: "The deployment's PostgreSQL database, if it has one. [env: NIMBUS_DATABASE]")
    var database: String? = Environment.string("NIMBUS_DATABASE")

    /// Where the database is, when the deployment has one.
    func location() throws -> PostgresLocation? {
        guard let database else { return nil }
        do {
            return try PostgresLocation(url: database)
        } catch {
            throw ValidationError("--database: \(error)")
        }
    }

    /// Throws, telling the operator `instead`, when the deployment keeps its data in PostgreSQL.
    func refusePostgres(_ command: String, instead: String) throws {
        guard database != nil else { return }
        throw CLIError(
            "nimbus \(command) works on an embedded data directory, and this deployment keeps its data in PostgreSQL "
                + "(--database, NIMBUS_DATABASE): \(instead)")
    }
}
