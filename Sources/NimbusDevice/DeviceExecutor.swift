import NimbusCore

/// The threads the device's work runs on: sync rounds, evictions and requested downloads, and the control
/// socket's answers. That work blocks its thread all the time — scanning folders, reading and hashing files,
/// writing and syncing downloads, renaming, taking file locks — and Swift's cooperative threads are shared
/// with everything else in the process: in an app that embeds `DeviceHost`, with the app. So the device never
/// runs on them: its entry points prefer this executor, whose threads may block, and everything the work
/// awaits (the HTTP client, the journal, `SyncActivity`) resumes here too.
package enum DeviceExecutor {
    package static let shared = ThreadsExecutor(name: "nimbus-device", threads: 4)

    /// Whether the calling code runs on the device's threads.
    package static var isCurrent: Bool { shared.isCurrent }

    /// Runs `body` on the device's threads.
    package static func run<T, Failure: Error>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        try await shared.run(isolation: isolation, body)
    }
}
