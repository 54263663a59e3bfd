import Foundation
import Logging
import NimbusCore
import NimbusStore
import PostgresNIO

/// The shared backend: every node of a deployment keeps its data in one PostgreSQL database, through
/// PostgresNIO's connection pool to the server that takes writes (`PostgresServers`: a URL may name a
/// primary and its standbys).
///
/// Every acknowledged write is committed with `synchronous_commit` on (set per connection, whatever the
/// server's default), so a crash of the database's machine loses none. Zone transactions lock their zone's
/// row for their whole length: writers of one zone queue (they never fail for each other), and a zone's
/// sequence numbers become visible in order (see `transact`).
package final class PostgresStore: Sendable {
    let servers: PostgresServers
    /// When a leased call last finished: a call waiting for a connection meanwhile waits on (`leased`).
    let leaseProgress = LeaseProgress()
    /// What statements log to: nothing above debug, so a statement's values never reach the logs.
    static let logger = Logger(label: "nimbus.postgres")

    private init(servers: PostgresServers) {
        self.servers = servers
    }

    /// Connects to the database `location` names and applies pending migrations, telling `migrating` their
    /// names first (when `migrating` throws, nothing is migrated).
    ///
    /// - Throws: `StoreError.newerDatabase` when a newer Nimbus migrated the database;
    ///   `StoreError.unavailable` when the server cannot be reached.
    package static func open(
        _ location: PostgresLocation, connections: Int = 20, logger: Logger = Logger(label: "nimbus.postgres"),
        migrating: @escaping @Sendable ([String]) throws -> Void = { _ in }
    ) async throws -> PostgresStore {
        let store = try await connect(location, connections: connections, logger: logger)
        do {
            try await store.migrate(migrating)
        } catch {
            store.close()
            throw error
        }
        return store
    }

    /// Connects without migrating: for tools that take the database as it is (a backup of one that an older
    /// Nimbus still serves, a restore into an empty one).
    package static func connect(
        _ location: PostgresLocation, connections: Int = 20, logger: Logger = Logger(label: "nimbus.postgres")
    ) async throws -> PostgresStore {
        var options = PostgresClient.Configuration.Options()
        options.maximumConnections = max(2, connections)
        // Every commit waits for its WAL record to be flushed, whatever the server's default says.
        options.additionalStartupParameters = [("synchronous_commit", "on"), ("application_name", "nimbus")]
        return PostgresStore(servers: try await PostgresServers(location, options: options, logger: logger))
    }

    /// Closes the pool's connections; the store is unusable afterwards.
    package func close() { servers.close() }

    deinit { servers.close() }

    /// Runs `body` in one transaction on one pooled connection, with PostgreSQL's failures as store errors.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await leased { connection in
                try await connection.withTransaction(logger: Self.logger) { connection in try await body(connection) }
            }
        } catch let error as PostgresTransactionError {
            throw Self.storeError(error.underlying)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Runs one statement outside a transaction of the caller's, with its rows collected.
    @discardableResult
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        do {
            return try await leased { connection in try await connection.run(query) }
        } catch {
            throw Self.storeError(error)
        }
    }

    /// PostgreSQL's failures that callers can act on, as store errors; the others as they are.
    static func storeError(_ error: any Error) -> any Error {
        if error is StoreError { return error }
        guard let error = error as? PSQLError else { return error }
        if let state = error.serverInfo?[.sqlState] {
            switch state {
            case "23505", "23503": return StoreError.duplicate(error.serverInfo?[.constraintName] ?? "row")
            case "53100": return StoreError.storageFull
            // A NUL character in text (`invalid byte sequence for encoding "UTF8": 0x00`): bad input, not a failure.
            case "22021", "22P05": return StoreError.unstorableText
            // Shutting down, out of connections, in recovery: the database will be back.
            case "57P01", "57P02", "57P03", "53300", "08000", "08003", "08006": return StoreError.unavailable
            // A write reaching a standby (or a primary set read-only): the primary is elsewhere, for now.
            case "25006": return StoreError.unavailable
            default: return error
            }
        }
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .poolClosed, .uncleanShutdown:
            return StoreError.unavailable
        default:
            return error
        }
    }
}

extension PostgresTransactionError {
    /// What made the transaction fail: its body's error, or else its BEGIN's or COMMIT's.
    var underlying: any Error { closureError ?? beginError ?? commitError ?? self }
}

extension PostgresRow {
    /// One column, by its position.
    func column<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T {
        try makeRandomAccess()[index].decode(T.self)
    }
}

extension [PostgresRow] {
    /// The first column of every row.
    func values<T: PostgresDecodable>(_ type: T.Type) throws -> [T] { try map { try $0.decode(T.self) } }

    /// The first column of the first row, or nil when there is no row.
    func value<T: PostgresDecodable>(_ type: T.Type) throws -> T? { try first.map { try $0.decode(T.self) } }
}

extension PostgresConnection {
    /// Runs one statement and reads all its rows: a statement's error can arrive with its rows, so a
    /// statement whose rows went unread could fail unseen and leave its transaction aborted.
    @discardableResult
    func run(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await self.query(query, logger: PostgresStore.logger).collect()
    }
}
