import CProcessTuning
import Foundation

/// Tuning of the C allocator for a long-running server process.
package enum MemoryAllocator {
    /// By default glibc hands the top of a thread's heap back to the kernel (`madvise`) as soon as 128 KiB
    /// of it is free. SQLite frees that much when a statement inside a transaction ends, so the commit
    /// thread returned memory and faulted it back in on every commit, and each return interrupted the
    /// other core to flush its TLB: about a tenth of the commit thread's time under concurrent writes.
    /// Heaps now keep up to 32 MiB free; blocks of 4 MiB and more (the largest request bodies) are still
    /// mapped on their own and returned when freed.
    ///
    /// Each heap (an arena) keeps that much, and glibc gives threads up to eight arenas a core. Blocking work
    /// runs on threads made as it needs them (`BlockingWork`), each soon with an arena of its own: a
    /// `DocumentBenchmarks peers` run took the server from a peak of 145–151 MB to 176–183 MB when it moved
    /// there, and 133 MB with two arenas a core. False where the C library is not glibc.
    @discardableResult
    package static func keepFreedMemory() -> Bool {
        nimbus_set_malloc_thresholds(32 << 20, 4 << 20) == 1
            && nimbus_set_malloc_arena_max(Int32(2 * ProcessInfo.processInfo.activeProcessorCount)) == 1
    }
}
