import Dispatch

/// The threads the device's work runs on: sync rounds, evictions and requested downloads, and the control
/// socket's answers. That work blocks its thread all the time — scanning folders, reading and hashing files,
/// writing and syncing downloads, renaming, taking file locks — and Swift's cooperative threads (as many as
/// cores, two on a small machine) are shared with everything else in the process: in an app that embeds
/// `DeviceHost`, with the app. So the device never runs on them: its entry points prefer this executor
/// (`withTaskExecutorPreference`, `Task(executorPreference:)`), whose Dispatch threads may block, and
/// everything the work awaits (the HTTP client, the journal, `SyncActivity`) resumes here too.
package final class DeviceExecutor: TaskExecutor {
    package static let shared = DeviceExecutor()

    /// Concurrent: a thread blocked on the disk does not hold up the others, and Dispatch adds threads while
    /// some are blocked.
    private let queue = DispatchQueue(label: "nimbus.device", attributes: .concurrent)

    private init() {}

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// Runs `body` on the device's threads (and everything it awaits, unless an actor of its own takes it).
    package static func run<T, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        try await withTaskExecutorPreference(shared, isolation: isolation, operation: body)
    }
}
