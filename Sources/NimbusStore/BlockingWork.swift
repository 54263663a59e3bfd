import Dispatch

/// Work that blocks its thread (writing and syncing files, listing directories) runs here: on threads
/// of Dispatch's own, never on Swift's cooperative threads, which every request shares (there are as many
/// as cores, two on a small machine), so one long call cannot stall them.
package enum BlockingWork {
    private static let queue = DispatchQueue(label: "nimbus.blocking-work", attributes: .concurrent)

    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
