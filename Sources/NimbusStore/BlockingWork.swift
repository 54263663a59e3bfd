import Dispatch
import Synchronization

/// Work that blocks its thread (writing and syncing files, listing directories) runs here, never on Swift's
/// cooperative threads, which every request shares (there are as many as cores, two on a small machine), so
/// one long call cannot stall them.
///
/// On Linux the cooperative threads are Dispatch's default root queue's, and a concurrent queue of its own runs
/// its work on those very threads: a large upload's 16 chunk syncs, waiting behind another program's `fsync`,
/// held every thread the server's request handlers had for 0.46 s (a question about which chunks the server
/// lacks waited that long before its handler ran). Serial queues run on Dispatch's overcommitting threads,
/// made as work needs them whatever other threads are blocked, and let go when idle: each call goes to the
/// least busy of the process's `BlockingLanes`.
package enum BlockingWork {
    /// The process's lanes: blocking calls under way at once, at most 64; more wait in their lanes.
    static let lanes = BlockingLanes(count: 64)

    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await lanes.run(body)
    }
}

/// Serial queues that blocking calls share (`BlockingWork`), each call on the least busy.
package final class BlockingLanes: Sendable {
    private let queues: [DispatchQueue]
    /// Calls queued or running in each lane.
    private let pending: Mutex<[Int]>

    package init(count: Int) {
        queues = (0..<count).map { DispatchQueue(label: "nimbus.blocking-work.\($0)") }
        pending = Mutex([Int](repeating: 0, count: count))
    }

    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let lane = pending.withLock { pending in
            let lane = pending.indices.min { pending[$0] < pending[$1] }!
            pending[lane] += 1
            return lane
        }
        return try await withCheckedThrowingContinuation { continuation in
            queues[lane].async {
                let result = Result { try body() }
                self.pending.withLock { $0[lane] -= 1 }
                continuation.resume(with: result)
            }
        }
    }
}
