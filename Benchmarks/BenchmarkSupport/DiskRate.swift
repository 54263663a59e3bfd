import Foundation

/// The floor of every transfer that ends on this machine's disk.
package enum DiskRate {
    /// MB/s of writing `bytes` to a new file in `directory` and `fdatasync`ing it: the disk's own rate.
    package static func ofSyncedWrites(bytes: Int, in directory: URL) throws -> Double {
        let path = directory.appendingPathComponent("disk-rate-probe").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw BenchmarkError("cannot create \(path)") }
        defer {
            close(descriptor)
            unlink(path)
        }
        let block = [UInt8](repeating: 0xA5, count: 4 << 20)
        let start = ContinuousClock.now
        for _ in 0..<(bytes / block.count) {
            guard write(descriptor, block, block.count) == block.count else { throw BenchmarkError("cannot write \(path)") }
        }
        guard fdatasync(descriptor) == 0 else { throw BenchmarkError("cannot sync \(path)") }
        return Double(bytes) / ((ContinuousClock.now - start).milliseconds / 1000) / 1_048_576
    }
}
