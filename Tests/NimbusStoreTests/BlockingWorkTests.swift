import Foundation
import NimbusStore
import NimbusTestingCore
import Synchronization
import Testing

/// Blocking calls run on threads of their own, so however many block at once, none waits for another to
/// finish and Swift's cooperative threads stay free.
@Suite struct BlockingWorkTests {
    /// Calls that block until released, as a sync behind a busy disk does.
    final class Calls: Sendable {
        let blocking = Atomic(0)
        let released = Atomic(false)

        func block() {
            blocking.add(1, ordering: .sequentiallyConsistent)
            while !released.load(ordering: .sequentiallyConsistent) { usleep(1_000) }
        }
    }

    @Test func callsBlockedAtOnceEachHaveAThreadAndTasksStillRun() async throws {
        // As many as a large upload's chunk syncs, far more than the cooperative threads (one a core). Were the calls
        // on those, the ones past the first few would wait for Dispatch to add a thread, about one a second (seen
        // here: 6 calls all blocking after 6.9 s), so the deadline tells "at once" from that by a wide margin.
        // Lanes of the test's own, as many as the process's: the servers of the tests running beside it share the
        // process's lanes, and with most of those busy a call here waits behind theirs (a loaded run once found
        // fewer than 16 of these blocking after 5 s).
        let count = 16
        let lanes = BlockingLanes(count: 64)
        let calls = Calls()
        let running = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<count { group.addTask { try await lanes.run { calls.block() } } }
                try await group.waitForAll()
            }
        }
        #expect(
            await eventually(timeout: .seconds(5)) { calls.blocking.load(ordering: .sequentiallyConsistent) == count },
            "every call blocks at once")
        #expect(
            await Task.detached { calls.blocking.load(ordering: .sequentiallyConsistent) }.value == count,
            "a task runs while they block")
        calls.released.store(true, ordering: .sequentiallyConsistent)
        try await running.value
    }
}
