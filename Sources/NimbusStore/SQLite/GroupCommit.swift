import GRDB
import Synchronization

/// Commits concurrent zone batches together: one transaction and one fsync for all the batches that
/// arrived while the previous transaction was being written.
///
/// A caller that finds no commit in progress writes its batch at once, on its own thread; callers that
/// arrive meanwhile suspend (instead of blocking a thread on SQLite's write lock) and are written
/// together next. Each batch runs in its own savepoint, so a batch whose check fails is rolled back
/// alone, and batches take their sequence numbers in arrival order.
final class GroupCommit: Sendable {
    typealias Body = @Sendable (Database) throws -> any Sendable

    private struct Job: Sendable {
        var body: Body
        var continuation: CheckedContinuation<any Sendable, any Error>
    }

    private struct State {
        var waiting: [Job] = []
        var writing = false
    }

    private let state = Mutex(State())
    private let pool: DatabasePool

    init(pool: DatabasePool) { self.pool = pool }

    func commit<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await commitErased(body) as! T
    }

    private func commitErased(_ body: @escaping Body) async throws -> any Sendable {
        if beginWriting() {
            defer { finishWriting() }
            return try write([body])[0].get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            if beginWriting(enqueueing: Job(body: body, continuation: continuation)) {
                continuation.resume(with: write([body])[0])
                finishWriting()
            }
        }
    }

    /// Claims the writer, or (with a job) queues the job for the current writer to hand over to.
    private func beginWriting(enqueueing job: Job? = nil) -> Bool {
        state.withLock { state in
            if state.writing {
                if let job { state.waiting.append(job) }
                return false
            }
            state.writing = true
            return true
        }
    }

    /// Hands over to the batches that arrived during a write, in a new task so that the writer's own
    /// request is answered without waiting for a queue that may keep filling.
    private func finishWriting() {
        let more = state.withLock { state in
            state.writing = !state.waiting.isEmpty
            return state.writing
        }
        if more { Task { self.writeWaiting() } }
    }

    private func writeWaiting() {
        let jobs = state.withLock { state in
            defer { state.waiting = [] }
            return state.waiting
        }
        for (job, outcome) in zip(jobs, write(jobs.map(\.body))) { job.continuation.resume(with: outcome) }
        finishWriting()
    }

    private func write(_ bodies: [Body]) -> [Result<any Sendable, any Error>] {
        if bodies.count == 1 {
            // Alone in its transaction, a batch needs no savepoint: failing rolls the transaction back.
            return [Result { try pool.write(bodies[0]) }]
        }
        do {
            return try pool.write { db in
                bodies.map { body in
                    var outcome: Result<any Sendable, any Error> = .failure(CancellationError())
                    do {
                        try db.inSavepoint {
                            outcome = .success(try body(db))
                            return .commit
                        }
                    } catch {
                        outcome = .failure(error)
                    }
                    return outcome
                }
            }
        } catch {
            // The transaction itself failed (disk full, I/O error): nothing was acknowledged.
            return bodies.map { _ in .failure(error) }
        }
    }
}
