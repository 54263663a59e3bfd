import Logging
import NimbusStore
import PostgresNIO
import Synchronization

/// The connection pool a store's statements go through, to one of its location's servers.
///
/// With one server and no `target_session_attrs=read-write`, that server's pool, which reconnects on its
/// own. Given a choice, the pool's server is the first that answers (and takes writes, with `read-write`),
/// and when a lease on it fails as unavailable, or it refuses a write as a standby would, the servers are
/// asked again, the current one first (so a primary that comes back after its standby was promoted is not
/// taken again while the promoted one answers), every quarter of a second until one suits: a promoted
/// standby is found without a restart. The old pool is closed once a new one serves.
final class PostgresServers: Sendable {
    private struct Pool: Sendable {
        var client: PostgresClient
        var running: Task<Void, Never>
        var server: Int
    }

    let location: PostgresLocation
    private let options: PostgresClient.Configuration.Options
    private let logger: Logger
    private let pool: Mutex<Pool?> = Mutex(nil)
    /// The search under way, if any: one at a time.
    private let search = Mutex<Task<Void, Never>?>(nil)
    private let closed = Atomic(false)

    /// How long one server may take to connect and say whether it takes writes.
    private static let askTimeout: Duration = .seconds(2)
    private static let pauseBetweenSearches: Duration = .milliseconds(250)

    /// Starts a pool to the first suitable server: at once to the only one, else after asking them.
    ///
    /// - Throws: `StoreError.unavailable` when the servers were asked and none suits.
    init(_ location: PostgresLocation, options: PostgresClient.Configuration.Options, logger: Logger) async throws {
        self.location = location
        self.options = options
        self.logger = logger
        var first = 0
        if location.seeksAnotherServer {
            guard let suitable = await firstSuitable(startingAt: 0) else { throw StoreError.unavailable }
            first = suitable
        }
        await startPool(on: first)
    }

    /// The current pool.
    var client: PostgresClient { pool.withLock { $0!.client } }

    /// The server the current pool connects to.
    var current: PostgresLocation.Server { pool.withLock { location.servers[$0!.server] } }

    /// Tells the servers that a lease on `client` failed as unavailable: if the store may choose and `client`
    /// is still the current pool, a search begins (unless one is under way).
    func failed(_ client: PostgresClient) {
        guard location.seeksAnotherServer, !closed.load(ordering: .relaxed),
            pool.withLock({ $0.map { $0.client === client } ?? false })
        else { return }
        search.withLock { search in
            guard search == nil else { return }
            search = Task { await self.searchUntilFound() }
        }
    }

    func close() {
        closed.store(true, ordering: .relaxed)
        search.withLock { $0?.cancel() }
        pool.withLock { $0?.running.cancel() }
    }

    private func searchUntilFound() async {
        defer { search.withLock { $0 = nil } }
        while !Task.isCancelled, !closed.load(ordering: .relaxed) {
            let current = pool.withLock { $0?.server } ?? 0
            if let suitable = await firstSuitable(startingAt: current) {
                if suitable != current {
                    logger.warning(
                        "moving to another database server",
                        metadata: [
                            "from": "\(location.servers[current])", "to": "\(location.servers[suitable])",
                        ])
                    await startPool(on: suitable)
                }
                return
            }
            try? await Task.sleep(for: Self.pauseBetweenSearches)
        }
    }

    /// The first server, from `start` round the list, that connects (and, with `read-write`, takes writes).
    private func firstSuitable(startingAt start: Int) async -> Int? {
        let count = location.servers.count
        for offset in 0..<count {
            let index = (start + offset) % count
            if await suits(location.servers[index]) { return index }
        }
        return nil
    }

    private func suits(_ server: PostgresLocation.Server) async -> Bool {
        guard var connecting = try? location.connectionConfiguration(server) else { return false }
        connecting.options.connectTimeout = .seconds(2)
        let configuration = connecting
        let requiresWrites = location.sessionAttributes == .readWrite
        let logger = logger
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                guard
                    let connection = try? await PostgresConnection.connect(
                        configuration: configuration, id: 0, logger: logger)
                else { return false }
                defer { Task { try? await connection.close() } }
                guard requiresWrites else { return true }
                // libpq's test for read-write: a standby (and a server set read-only) answers "on".
                let rows = try? await connection.query("SHOW transaction_read_only", logger: logger).collect()
                return (try? rows?.first?.decode(String.self)) == "off"
            }
            group.addTask {
                try? await Task.sleep(for: Self.askTimeout)
                return false
            }
            let answer = await group.next() ?? false
            group.cancelAll()
            return answer
        }
    }

    /// Starts a pool to `server` and makes it the current one, closing the one before.
    private func startPool(on server: Int) async {
        var configuration = location.clientConfiguration(location.servers[server])
        configuration.options = options
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        // The pool serves leases once `run()` has begun; one asked for earlier waits for it, and the pool warns.
        // Waiting for the task that calls `run()` to start makes that rare (not impossible: the wait may resume
        // on another thread a moment before `run()` is entered).
        let (started, starting) = AsyncStream<Void>.makeStream()
        let running = Task {
            starting.finish()
            await client.run()
        }
        for await _ in started {}
        let replaced = pool.withLock { pool in
            defer { pool = Pool(client: client, running: running, server: server) }
            return pool
        }
        replaced?.running.cancel()
        if closed.load(ordering: .relaxed) { running.cancel() }
    }
}
