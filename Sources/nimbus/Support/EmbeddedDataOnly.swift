import ArgumentParser
import Foundation
import NimbusStore

/// `nimbus backup`, `restore` and `check` work on an embedded data directory. Given the PostgreSQL database a
/// deployment keeps its data in, they say what to use instead rather than copy or check only the blobs: a
/// silent partial backup is worse than none.
struct EmbeddedDataOnly: ParsableArguments {
    @Option(
        help: """
            The deployment's PostgreSQL database, if it has one: the command then says what to use instead. \
            [env: NIMBUS_DATABASE]
            """)
    var database: String? = Environment.string("NIMBUS_DATABASE")

    /// Throws when the data directory's server keeps its blobs in an object store: a backup or check of the
    /// directory would miss every blob.
    func refuseRemoteBlobs(_ command: String, data: String) throws {
        guard let place = EmbeddedDataDirectory(URL(fileURLWithPath: data)).remoteBlobs else { return }
        throw CLIError(
            "nimbus \(command) reads the blobs in the data directory, and this deployment keeps them in \(place): "
                + "back the database up alone and keep the bucket's own versioning or replication for the blobs")
    }

    /// Throws, telling the operator `instead`, when the deployment keeps its data in PostgreSQL.
    func refusePostgres(_ command: String, instead: String) throws {
        guard database != nil else { return }
        throw CLIError(
            "nimbus \(command) works on an embedded data directory, and this deployment keeps its data in PostgreSQL "
                + "(--database, NIMBUS_DATABASE): \(instead)")
    }
}
