import NimbusStore
import PostgresNIO
import Synchronization

extension PostgresStore {
    /// How long a call waits for a pooled connection, while no leased call finishes, before it answers
    /// `StoreError.unavailable`. While PostgreSQL cannot be reached, the pool goes on trying to connect and
    /// would keep a request waiting for up to a minute; a client is better told at once to try again later.
    /// A call behind others that finish meanwhile waits on (up to `longestLeaseWait`): that queue moves, and
    /// on a loaded machine it took more than this to serve 64 commits at once on 8 connections, which were
    /// then refused as if the database were down.
    package static let leaseTimeout: Duration = .seconds(5)
    /// How long a call waits for a pooled connection at most, however the queue moves: an overload that
    /// long is answered `StoreError.unavailable`, as a client's request would time out soon after.
    package static let longestLeaseWait: Duration = .seconds(30)

    /// Runs `body` on a pooled connection, once one is leased within `leaseTimeout` (or a moving queue's
    /// `longestLeaseWait`); a lease that fails or times out is `StoreError.unavailable` (nothing ran). Once
    /// `body` has begun, it runs to its end, or until its connection closes: then the caller is answered
    /// `StoreError.unavailable` at once.
    ///
    /// The wait for the lease is left behind, not awaited, when the deadline passes: the pool may take until
    /// its own circuit breaker trips (a minute) to answer a cancelled wait while it cannot connect. So is a
    /// body whose connection closed under it: PostgresNIO (1.33) drops a statement written to a connection
    /// whose channel has closed, and its caller waits forever, cancelled or not. Closing the connection
    /// while a body runs leaves the body's outcome unknown, as a connection lost during any commit does.
    ///
    /// - Parameter cancellable: whether the caller's cancellation also cancels a body that has begun (a
    ///   listener's, which would otherwise never end), rather than letting it run to its end (a write's).
    func leased<T: Sendable>(
        cancellable: Bool = false, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let race = LeaseRace<T>()
        let (client, progress) = (servers.client, leaseProgress)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    race.start(continuation, timeout: Self.leaseTimeout, longest: Self.longestLeaseWait, progress: progress) {
                        try await client.withConnection { connection in
                            guard race.begin(on: connection) else { throw StoreError.unavailable }
                            let result = try await body(connection)
                            progress.finished()
                            return result
                        }
                    }
                }
            } onCancel: {
                race.abandon(throwing: CancellationError(), evenIfBegun: cancellable)
            }
        } catch {
            // The server may be gone, or no longer the primary: the servers look for the one to use.
            if Self.storeError((error as? PostgresTransactionError)?.underlying ?? error) as? StoreError == .unavailable {
                servers.failed(client)
            }
            throw error
        }
    }
}

/// When a leased body last finished on a store's pool: the sign that its queue moves.
final class LeaseProgress: Sendable {
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    func finished() { last.withLock { $0 = .now } }

    var latest: ContinuousClock.Instant? { last.withLock { $0 } }
}

/// A lease's wait against its deadline (and its caller's cancellation): whichever ends first answers the
/// caller, once; a body that has begun always answers.
private final class LeaseRace<T: Sendable>: Sendable {
    private enum Phase {
        case idle
        case waiting(CheckedContinuation<T, any Error>)
        case begun(CheckedContinuation<T, any Error>)
        /// Abandoned before it started (its caller was cancelled already).
        case abandoned(any Error)
        case over
    }

    private let phase = Mutex<Phase>(.idle)
    private let tasks = Mutex<[Task<Void, Never>]>([])
    /// The watch on the leased connection's close, while the body runs.
    private let watch = Mutex<ConnectionClosings.Watch?>(nil)

    /// Waits for `work` to answer, until `timeout` has passed with no lease of the pool finishing
    /// (`progress`), or `longest` in all.
    func start(
        _ continuation: CheckedContinuation<T, any Error>, timeout: Duration, longest: Duration, progress: LeaseProgress,
        _ work: @escaping @Sendable () async throws -> T
    ) {
        let abandoned: (any Error)? = phase.withLock { phase in
            if case .abandoned(let error) = phase {
                phase = .over
                return error
            }
            phase = .waiting(continuation)
            return nil
        }
        if let abandoned { return continuation.resume(throwing: abandoned) }
        let worker = Task {
            do {
                self.finish(.success(try await work()))
            } catch {
                self.finish(.failure(error))
            }
        }
        let timer = Task {
            let start = ContinuousClock.now
            var deadline = start + timeout
            while true {
                guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                let moving = progress.latest.map { $0 + timeout } ?? deadline
                deadline = min(moving, start + longest)
                if deadline <= .now { break }
            }
            self.abandon(throwing: StoreError.unavailable)
        }
        tasks.withLock { $0 = [worker, timer] }
    }

    /// Whether the body may run on `connection`: false once the caller has been answered. From here on, the
    /// connection's close answers the caller.
    func begin(on connection: PostgresConnection) -> Bool {
        let begun = phase.withLock { phase in
            guard case .waiting(let continuation) = phase else { return false }
            phase = .begun(continuation)
            return true
        }
        guard begun else { return false }
        let watching = ConnectionClosings.shared.watch(connection) { self.connectionClosed() }
        watch.withLock { $0 = watching }
        return true
    }

    /// Answers a caller whose body is still running with `StoreError.unavailable`.
    private func connectionClosed() {
        let begun: CheckedContinuation<T, any Error>? = phase.withLock { phase in
            guard case .begun(let continuation) = phase else { return nil }
            phase = .over
            return continuation
        }
        begun?.resume(throwing: StoreError.unavailable)
    }

    /// Answers the caller, unless the lease was not begun and the caller was answered already.
    private func finish(_ result: Result<T, any Error>) {
        let answer: (CheckedContinuation<T, any Error>, Result<T, any Error>)? = phase.withLock { phase in
            defer { phase = .over }
            switch phase {
            case .begun(let continuation): return (continuation, result)
            // The pool's own failures before a lease (its circuit breaker, its shutdown) mean nothing ran.
            case .waiting(let continuation): return (continuation, .failure(StoreError.unavailable))
            case .idle, .abandoned, .over: return nil
            }
        }
        tasks.withLock { $0.forEach { $0.cancel() } }
        if let watching = watch.withLock({ $0.take() }) { ConnectionClosings.shared.unwatch(watching) }
        if let (continuation, result) = answer { continuation.resume(with: result) }
    }

    /// Answers the caller with `error` if no lease has begun (or `evenIfBegun`), and gives up the wait and
    /// the body.
    func abandon(throwing error: any Error, evenIfBegun: Bool = false) {
        let waiting: CheckedContinuation<T, any Error>? = phase.withLock { phase in
            switch phase {
            case .idle:
                phase = .abandoned(error)
                return nil
            case .waiting(let continuation):
                phase = .over
                return continuation
            case .begun(let continuation) where evenIfBegun:
                phase = .over
                return continuation
            case .begun, .abandoned, .over:
                return nil
            }
        }
        guard let waiting else { return }
        tasks.withLock { $0.forEach { $0.cancel() } }
        waiting.resume(throwing: error)
    }
}

/// Who waits on which pooled connection, so a connection's close answers them: one callback on each
/// connection's `closeFuture` for its whole life (a callback per lease would pile up on a connection that
/// lives for millions of leases), and a table of the leases running on it.
private final class ConnectionClosings: Sendable {
    static let shared = ConnectionClosings()

    struct Watch: Sendable {
        fileprivate let connection: ObjectIdentifier
        fileprivate let number: UInt64
    }

    private struct Table {
        var next: UInt64 = 0
        /// Each connection watched (held, so its identifier cannot pass to another connection before it
        /// leaves) and the leases on it; a connection leaves when it closes.
        var watched: [ObjectIdentifier: (connection: PostgresConnection, leases: [UInt64: @Sendable () -> Void])] = [:]
    }

    private let table = Mutex(Table())

    /// Calls `closed` once `connection` closes, unless `unwatch` comes first; at once if it has closed.
    func watch(_ connection: PostgresConnection, closed: @escaping @Sendable () -> Void) -> Watch {
        let key = ObjectIdentifier(connection)
        let (watch, first) = table.withLock { table in
            table.next += 1
            let first = table.watched[key] == nil
            table.watched[key, default: (connection, [:])].leases[table.next] = closed
            return (Watch(connection: key, number: table.next), first)
        }
        if first { connection.closeFuture.whenComplete { _ in self.closed(key) } }
        return watch
    }

    func unwatch(_ watch: Watch) {
        table.withLock { _ = $0.watched[watch.connection]?.leases.removeValue(forKey: watch.number) }
    }

    private func closed(_ connection: ObjectIdentifier) {
        let leases = table.withLock { $0.watched.removeValue(forKey: connection)?.leases } ?? [:]
        for closed in leases.values { closed() }
    }
}

/// The blob decision lock of nodes sharing a PostgreSQL database and a bucket: a transaction-scoped
/// advisory lock, held while one node decides on one blob (`S3BlobStore`); and another that backups hold
/// shared and sweeps try to take alone.
package struct PostgresDecisionLock: BlobDecisionLock {
    package let store: PostgresStore
    /// Arbitrary constants naming the locks.
    private static let key: Int64 = 0x4E_494D_424C_4F42
    private static let sweepKey: Int64 = 0x4E_494D_5357_4550

    package init(store: PostgresStore) { self.store = store }

    package func withLock<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await store.transaction { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(\(Self.key))")
            return try await body()
        }
    }

    package func sweepingUnlessHeldOff<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await store.transaction { connection in
            guard try await connection.run("SELECT pg_try_advisory_xact_lock(\(Self.sweepKey))").value(Bool.self) == true
            else { return nil }
            return try await body()
        }
    }

    package func holdingOffSweeps<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await store.transaction { connection in
            try await connection.run("SELECT pg_advisory_xact_lock_shared(\(Self.sweepKey))")
            return try await body()
        }
    }
}
