import Foundation
import NimbusTestingCore
import Synchronization
import Testing

@testable import NimbusKit

/// File coordination's locks: a write excludes reads and writes of its item and of what is inside it (a
/// folder), reads share, `acquire` waits for a held lock, and a lock ends with its holder.
@Suite(.cleansUp) struct CoordinationLockTests {
    /// Takes `accesses` on a thread of its own and returns when it holds them, recording that moment.
    final class Waiter: Sendable {
        let acquired = Mutex<ContinuousClock.Instant?>(nil)
        let held = Mutex<CoordinationLock?>(nil)
        init(root: URL, _ accesses: [(path: String, exclusive: Bool)]) {
            Thread.detachNewThread { [self] in
                let lock = try? CoordinationLock(root: root, accesses: accesses)
                acquired.withLock { $0 = ContinuousClock.now }
                held.withLock { $0 = lock }
            }
        }
        var instant: ContinuousClock.Instant? { acquired.withLock { $0 } }
    }

    func lockFile(_ root: URL) -> String { CoordinationLock.file(root: root).path }

    func root() throws -> URL {
        let root = TestResources.temporaryDirectory(prefix: "nimbus-locks")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        return root
    }

    @Test func aWriteExcludesReadsOfItsItemAndOfWhatIsInsideIt() async throws {
        let root = try root()
        let item = root.appendingPathComponent("Mobile Documents/c/Documents/a.txt").path
        let folder = root.appendingPathComponent("Mobile Documents/c/Documents").path
        for (held, wanted) in [(item, item), (folder, item)] {
            var writer: CoordinationLock? = try CoordinationLock(root: root, accesses: [(held, true)])
            let reader = Waiter(root: root, [(wanted, false)])
            #expect(await eventually { FileLocks.isAwaited(on: lockFile(root)) }, "the read waits while \(held) is written")
            #expect(reader.instant == nil)
            let released = ContinuousClock.now
            _ = writer
            writer = nil
            #expect(await eventually { reader.instant != nil })
            #expect(try #require(reader.instant) >= released, "and goes on once the write is done")
        }
    }

    /// A waiting request is seen however long the kernel's table of locks is: a loaded machine's runs to
    /// many pages, and tests waiting for "the read waits" would otherwise time out.
    @Test func aWaitingLockIsSeenAmongManyOthers() async throws {
        let root = try root()
        let item = root.appendingPathComponent("Mobile Documents/c/a.txt").path
        let writer = try CoordinationLock(root: root, accesses: [(item, true)])
        let others = try self.root()
        let many = try CoordinationLock(
            root: others, accesses: (0..<400).map { (others.appendingPathComponent("\($0).txt").path, false) })
        let reader = Waiter(root: root, [(item, false)])
        #expect(await eventually { FileLocks.isAwaited(on: lockFile(root)) }, "the read is seen waiting")
        #expect(reader.instant == nil)
        withExtendedLifetime((writer, many)) {}
    }

    @Test func readsShareAndOtherItemsAreFree() async throws {
        let root = try root()
        let item = root.appendingPathComponent("Mobile Documents/c/a.txt").path
        let reading = try CoordinationLock(root: root, accesses: [(item, false)])
        let second = Waiter(root: root, [(item, false)])
        let other = Waiter(root: root, [(root.appendingPathComponent("Mobile Documents/c/b.txt").path, true)])
        #expect(await eventually { second.instant != nil && other.instant != nil })
        withExtendedLifetime(reading) {}
    }

    /// `acquire`, as the sync engine takes locks: a free one at once, a held one once its holder lets go.
    @Test func acquireTakesAFreeLockAndWaitsForAHeldOne() async throws {
        let root = try root()
        let item = root.appendingPathComponent("Mobile Documents/c/a.txt").path
        var writer: CoordinationLock? = try await CoordinationLock.acquire(root: root, accesses: [(item, true)])
        let acquired = Mutex<ContinuousClock.Instant?>(nil)
        let reader = Task {
            let lock = try await CoordinationLock.acquire(root: root, accesses: [(item, false)])
            acquired.withLock { $0 = ContinuousClock.now }
            return lock
        }
        #expect(await eventually { FileLocks.isAwaited(on: lockFile(root)) }, "the read waits while the item is written")
        #expect(acquired.withLock { $0 } == nil)
        let released = ContinuousClock.now
        _ = writer
        writer = nil
        withExtendedLifetime(try await reader.value) {}
        #expect(try #require(acquired.withLock { $0 }) >= released, "and goes on once the write is done")
    }

    @Test func aLockEndsWithItsHolder() async throws {
        let root = try root()
        let item = root.appendingPathComponent("Mobile Documents/c/a.txt").path
        do { _ = try CoordinationLock(root: root, accesses: [(item, true)]) }
        let next = Waiter(root: root, [(item, true)])
        #expect(await eventually { next.instant != nil }, "released when its holder let go of it")
    }
}
