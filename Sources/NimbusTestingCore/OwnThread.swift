import Foundation

/// Runs CPU-heavy test work (megabytes to generate and cut) on a thread of its own and returns its result.
/// Swift Testing runs every test on Swift's cooperative threads (two on a 2-core machine): a test that computes
/// for seconds there stalls every other test's servers and clients meanwhile. Check the result after it
/// returns: `#expect` attributes issues through the task, which the thread does not have.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
