import ArgumentParser

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

    /// Throws, telling the operator `instead`, when the deployment keeps its data in PostgreSQL.
    func refusePostgres(_ command: String, instead: String) throws {
        guard database != nil else { return }
        throw CLIError(
            "nimbus \(command) works on an embedded data directory, and this deployment keeps its data in PostgreSQL "
                + "(--database, NIMBUS_DATABASE): \(instead)")
    }
}
