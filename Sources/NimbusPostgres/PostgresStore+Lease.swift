import NimbusStore
import PostgresNIO
import Synchronization

extension PostgresStore {
    /// How long a call waits for a pooled connection before it answers `StoreError.unavailable`. While
    /// PostgreSQL cannot be reached, the pool goes on trying to connect and would keep a request waiting for
    /// up to a minute; a client is better told at once to try again later. A wait this long also means every
    /// connection is busy for seconds: an overload, for which the answer is the same.
    package static let leaseTimeout: Duration = .seconds(5)

    /// Runs `body` on a pooled connection, once one is leased within `leaseTimeout`; a lease that fails or
    /// times out is `StoreError.unavailable` (nothing ran). Once `body` has begun, it runs to its end.
    ///
    /// The wait for the lease is left behind, not awaited, when the deadline passes: the pool may take until
    /// its own circuit breaker trips (a minute) to answer a cancelled wait while it cannot connect.
    func leased<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let race = LeaseRace<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation, timeout: Self.leaseTimeout) {
                    try await self.client.withConnection { connection in
                        guard race.begin() else { throw StoreError.unavailable }
                        return try await body(connection)
                    }
                }
            }
        } onCancel: {
            race.abandon(throwing: CancellationError())
        }
    }
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

    func start(
        _ continuation: CheckedContinuation<T, any Error>, timeout: Duration, _ work: @escaping @Sendable () async throws -> T
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
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self.abandon(throwing: StoreError.unavailable)
        }
        tasks.withLock { $0 = [worker, timer] }
    }

    /// Whether the body may run: false once the caller has been answered.
    func begin() -> Bool {
        phase.withLock { phase in
            guard case .waiting(let continuation) = phase else { return false }
            phase = .begun(continuation)
            return true
        }
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
        if let (continuation, result) = answer { continuation.resume(with: result) }
    }

    /// Answers the caller with `error` if no lease has begun, and gives up the wait.
    func abandon(throwing error: any Error) {
        let waiting: CheckedContinuation<T, any Error>? = phase.withLock { phase in
            switch phase {
            case .idle:
                phase = .abandoned(error)
                return nil
            case .waiting(let continuation):
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
