import BenchmarkSupport
import Crypto
import Foundation
import NimbusCore
import NimbusDevice

/// `docs chunking`: the CPU a large file's bytes cost on the device that uploads it, before the network:
/// reading the file, cutting it into chunks and hashing each chunk and the whole (`FileContent.chunks`, what
/// an upload and a read under a lock do), beside its parts measured alone in the same run over the same
/// bytes in memory: the chunker's cuts, SHA-256 once, and reading the file with nothing done to the bytes.
enum ChunkingBenchmark {
    /// Medians of the runs.
    struct Figures {
        let bytes: Int
        let pass: Duration
        let cuts: Duration
        let hash: Duration
        let read: Duration
    }

    static func run(bytes count: Int = 256 << 20, runs: Int = 5) async throws -> Figures {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-chunking-\(UUIDString.random())")
        defer { try? FileManager.default.removeItem(at: file) }
        let bytes = PeerWorkloads.pseudorandom(count)
        // In the page cache, as a file just written is: the figures are CPU, not the disk.
        try bytes.write(to: file)
        var (passes, cuts, hashes, reads): ([Duration], [Duration], [Duration], [Duration]) = ([], [], [], [])
        let clock = ContinuousClock()
        for _ in 0..<runs {
            let start = clock.now
            _ = try await FileContent.chunks(of: file) { _, _ in }
            passes.append(clock.now - start)
            cuts.append(clock.measure { _ = bytes.withUnsafeBytes { ContentDefinedChunker.standard.chunkLengths(of: $0) } })
            hashes.append(clock.measure { _ = bytes.withUnsafeBytes { SHA256.hash(data: $0) } })
            reads.append(try clock.measure { try readAll(file.path) })
        }
        func median(_ values: [Duration]) -> Duration { values.sorted()[values.count / 2] }
        return Figures(bytes: count, pass: median(passes), cuts: median(cuts), hash: median(hashes), read: median(reads))
    }

    /// The file read four MiB at a time, as `FileContent` reads it, the bytes untouched.
    private static func readAll(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BenchmarkError("cannot open \(path)") }
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count == 0 { return }
            guard count > 0 || errno == EINTR else { throw BenchmarkError("cannot read \(path)") }
        }
    }
}
