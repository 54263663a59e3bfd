import CProcessTuning

/// Tuning of the C allocator for a long-running server process.
package enum MemoryAllocator {
    /// By default glibc hands the top of a thread's heap back to the kernel (`madvise`) as soon as 128 KiB
    /// of it is free. SQLite frees that much when a statement inside a transaction ends, so the commit
    /// thread returned memory and faulted it back in on every commit, and each return interrupted the
    /// other core to flush its TLB: about a tenth of the commit thread's time under concurrent writes.
    /// Heaps now keep up to 32 MiB free; blocks of 4 MiB and more (the largest request bodies) are still
    /// mapped on their own and returned when freed. False where the C library is not glibc.
    @discardableResult
    package static func keepFreedMemory() -> Bool {
        nimbus_set_malloc_thresholds(32 << 20, 4 << 20) == 1
    }
}
