import GRDB
import Synchronization

/// Commits concurrent zone batches together: one transaction and one fsync for all the batches that
/// arrived while the previous transaction was being written.
///
/// The first caller to find no commit in progress becomes the leader and writes every waiting batch;
/// the others suspend instead of blocking a thread on SQLite's write lock. Each batch runs in its own
/// savepoint, so a batch whose check fails is rolled back alone, and batches take their sequence
/// numbers in arrival order.
final class GroupCommit: Sendable {
    struct Job: Sendable {
        var body: @Sendable (Database) throws -> ZoneState
        var continuation: CheckedContinuation<ZoneState, any Error>
    }

    private struct State {
        var waiting: [Job] = []
        var leading = false
    }

    private let state = Mutex(State())
    private let pool: DatabasePool

    init(pool: DatabasePool) { self.pool = pool }

    func commit(_ body: @escaping @Sendable (Database) throws -> ZoneState) async throws -> ZoneState {
        try await withCheckedThrowingContinuation { continuation in
            let leads = state.withLock { state in
                state.waiting.append(Job(body: body, continuation: continuation))
                defer { state.leading = true }
                return !state.leading
            }
            if leads { drain() }
        }
    }

    /// Writes one group. Batches that arrived meanwhile are written by a new task, so the leader's own
    /// request is answered without waiting for a queue that may keep filling.
    private func drain() {
        let jobs = state.withLock { state in
            defer { state.waiting = [] }
            return state.waiting
        }
        write(jobs)
        let more = state.withLock { state in
            if state.waiting.isEmpty { state.leading = false }
            return state.leading
        }
        if more { Task { self.drain() } }
    }

    private func write(_ jobs: [Job]) {
        let outcomes: [Result<ZoneState, any Error>]
        do {
            outcomes = try pool.write { db in
                jobs.map { job in
                    var outcome: Result<ZoneState, any Error> = .failure(CancellationError())
                    do {
                        try db.inSavepoint {
                            outcome = .success(try job.body(db))
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
            outcomes = jobs.map { _ in .failure(error) }
        }
        for (job, outcome) in zip(jobs, outcomes) { job.continuation.resume(with: outcome) }
    }
}
