import Dispatch
import Foundation
import Synchronization

/// A task executor on threads of its own, for work that must not run on Swift's cooperative threads: those are
/// as many as cores (two on a small machine) and shared by everything in the process, so work that blocks them,
/// or keeps them busy for long, stalls every other task. Not a Dispatch queue: on Linux its blocks run on the
/// same worker threads as Swift's tasks, and work that kept those busy delayed the tasks just the same. Tasks
/// run here when they prefer it (`run`, `Task(executorPreference:)`), and so does everything they await, unless
/// an actor of its own takes it.
package final class ThreadsExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])
    /// The threads' identities, for `isCurrent` (`Thread.current` names a Dispatch worker inside a job).
    private let workers = Mutex<Set<pthread_t>>([])
    /// One signal a job, taken by the thread that runs it.
    private let ready = DispatchSemaphore(value: 0)

    /// `threads` threads named `name`: enough that work blocked on the disk leaves others to run.
    package init(name: String, threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in work() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Whether the calling code runs on one of these threads.
    package var isCurrent: Bool { workers.withLock { $0.contains(pthread_self()) } }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }

    /// Runs `body` here, and what it awaits.
    package func run<T, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        try await withTaskExecutorPreference(self, isolation: isolation, operation: body)
    }

    private func work() {
        workers.withLock { _ = $0.insert(pthread_self()) }
        let executor = asUnownedTaskExecutor()
        while true {
            ready.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job.runSynchronously(on: executor)
        }
    }
}
