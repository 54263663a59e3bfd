import Dispatch

/// A task executor on Dispatch threads of its own, for work that must not run on Swift's cooperative threads:
/// those are as many as cores (two on a small machine) and shared by everything in the process, so work that
/// blocks them, or keeps them busy for long, stalls every other task. Tasks run here when they prefer it
/// (`run`, `Task(executorPreference:)`), and so does everything they await, unless an actor of its own takes it.
package final class DispatchTaskExecutor: TaskExecutor {
    /// Concurrent: a thread blocked on the disk does not hold up the others, and Dispatch adds threads while
    /// some are blocked.
    private let queue: DispatchQueue

    package init(label: String) {
        queue = DispatchQueue(label: label, attributes: .concurrent)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// Runs `body` here, and what it awaits.
    package func run<T, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        try await withTaskExecutorPreference(self, isolation: isolation, operation: body)
    }
}
