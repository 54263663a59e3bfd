import BenchmarkSupport
import Crypto
import Foundation
import Logging
import NimbusCore
import NimbusDevice
import NimbusKit

/// Document benchmarks: two devices of one user (sync engines in this process, each with its own folder
/// and journal) against a real `nimbus serve` (release build) on loopback.
///
///     scripts/benchmark docs [propagation|apps|query|commit|small|large|edit]...
///     scripts/benchmark docs scale    (100,000 files; only when named: it takes minutes)
///     scripts/benchmark docs scan     (a round's scan of 11,000 and 100,000 unchanged files; only when named)
///     scripts/benchmark docs chunking (a 256 MB file read, cut and hashed, beside its parts; only when named)
///     scripts/benchmark docs peers    (beside Syncthing; peers-scale adds 100,000 files; only when named)
///     scripts/benchmark docs peers-memory (the 100,000 files through the two Nimbus daemons alone, their memory)
///     scripts/benchmark docs peers-large  (the 256 MB row beside Syncthing, five pairs of new files in turn)
///     scripts/benchmark docs webdav   (/dav/ beside Apache's mod_dav; only when named)
@main
enum DocumentBenchmarks {
    static func main() async throws {
        let nimbus = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus")
        guard FileManager.default.isExecutableFile(atPath: nimbus.path) else {
            print("build the nimbus executable first: scripts/benchmark")
            exit(1)
        }
        let server = try await ServerProcess(
            nimbus: nimbus, port: Int.random(in: 20000...40000),
            extraArguments: ["--session-rate", "1000000", "--token-rate", "1000000"])
        defer { server.stop() }
        let selected = Set(CommandLine.arguments.dropFirst())
        func wanted(_ name: String) -> Bool { selected.isEmpty || selected.contains(name) }
        var table = ResultTable()
        let roundTrip = try await server.floorRows(into: &table)

        if wanted("propagation") {
            let pair = try await DevicePair(server, name: "propagation")
            let latencies = try await pair.withDaemons { try await pair.propagation(files: 100) }
            let percentiles = Percentiles(latencies)
            let floor = String(format: "floor: 5 round trips (%.2f ms) + 2 synced commits", 5 * roundTrip / 1000)
            table.add(
                "Propagation p50, 100 × 1 KiB written on A → identical on B",
                String(format: "%.1f ms (%@)", percentiles.at(50), floor),
                target: "≤ 50 ms", met: percentiles.at(50) <= 50)
            table.add(
                "Propagation p99, 100 × 1 KiB", String(format: "%.1f ms", percentiles.at(99)), target: "≤ 250 ms",
                met: percentiles.at(99) <= 250)
        }
        if wanted("apps") {
            let pair = try await DevicePair(server, name: "apps")
            let (known, current) = try await MetadataQueryBenchmarks.saveToQueryUpdate(pair, saves: 100)
            let (first, downloaded) = (Percentiles(known), Percentiles(current))
            let floor = String(format: "floor: 5 round trips (%.2f ms) + 2 synced commits", 5 * roundTrip / 1000)
            table.add(
                "Save on A → B's MetadataQuery update, p50 (downloaded: p50)",
                String(format: "%.1f ms (%.1f ms; %@)", first.at(50), downloaded.at(50), floor), target: "≤ 60 ms",
                met: first.at(50) <= 60)
            table.add(
                "Save on A → B's MetadataQuery update, p99 (downloaded: p99)",
                String(format: "%.1f ms (%.1f ms)", first.at(99), downloaded.at(99)), target: "≤ 300 ms",
                met: first.at(99) <= 300)
        }
        if wanted("query") {
            let session = try await server.signIn("query@bench.local", device: "query")
            let figures = try await MetadataQueryBenchmarks.largeQuery(
                items: 100_000, in: server.dataDirectory.deletingLastPathComponent(), session: session,
                apiToken: server.apiToken, container: server.container)
            let (cold, warm) = (Percentiles(figures.coldGathering), Percentiles(figures.warmGathering))
            let selective = Percentiles(figures.selectiveGathering)
            let (updates, socket) = (Percentiles(figures.updates), Percentiles(figures.roundTrip))
            table.add(
                "Floor: one control-socket request and answer (status), p50", String(format: "%.2f ms", socket.at(50)),
                target: "(reference)", met: true)
            table.add(
                "MetadataQuery over 100,000 items: gathering finished, the first after a daemon starts (median of 5 daemons; range)",
                String(format: "%.0f ms (%.0f–%.0f)", cold.at(50), cold.at(0), cold.at(100)), target: "≤ 500 ms",
                met: cold.at(50) <= 500)
            table.add(
                "MetadataQuery over 100,000 items: gathering finished, later queries (median of 5; one match: median)",
                String(format: "%.0f ms (%.1f ms)", warm.at(50), selective.at(50)), target: "≤ 500 ms",
                met: warm.at(50) <= 500)
            table.add(
                "MetadataQuery over 100,000 items: update after the daemon records a change, p50 (p99)",
                String(format: "%.2f ms (%.2f ms)", updates.at(50), updates.at(99)), target: "≤ 20 ms",
                met: updates.at(50) <= 20)
        }
        if wanted("small") || wanted("commit") {
            let pair = try await DevicePair(server, name: "commit")
            let (upload, commit) = try await commitFloor(pair, files: 200, rounds: wanted("commit") ? 50 : 5)
            let creation = try fileCreation(in: server.dataDirectory)
            table.add(
                "Floor: creating one empty file on this disk", String(format: "%.0f µs", creation * 1e6), target: "(reference)",
                met: true)
            table.add(
                "Floor: 200 new 4 KiB files' chunks in one bundle (µs a file)", String(format: "%.0f µs", upload * 1e6),
                target: "(reference)", met: true)
            table.add(
                "Floor: their commit, one modify of 200 saves (µs a file)",
                String(format: "%.0f µs (server's ceiling %.0f files/s)", commit * 1e6, 1 / (upload + commit)),
                target: "(reference)", met: true)
            if wanted("small") {
                let pair = try await DevicePair(server, name: "small")
                let cpuBefore = try server.cpuSeconds() + Self.ownCPUSeconds()
                let seconds = try await pair.withDaemons { try await manySmallFiles(pair, count: 1000, size: 4096) }
                // Both engines, the writer and the server share this machine's cores: the CPU all of them spent
                // a file bounds the rate at cores / CPU a file.
                let cpu = (try server.cpuSeconds() + Self.ownCPUSeconds() - cpuBefore) / 1000
                let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
                table.add(
                    "Many small files: 1,000 × 4 KiB on A → all on B (files/s)",
                    String(
                        format: "%.0f (%.2f s; %.2f× the server's ceiling)", 1000 / seconds, seconds,
                        (upload + commit) * 1000 / seconds),
                    target: "≥ 1,000", met: 1000 / seconds >= 1000)
                table.add(
                    "Floor: CPU a small file costs, server + both engines + writer",
                    String(format: "%.2f ms (ceiling %.0f cores / CPU: %.0f files/s)", cpu * 1000, cores, cores / cpu),
                    target: "(reference)", met: true)
            }
        }
        if wanted("large") {
            let pair = try await DevicePair(server, name: "large")
            let size = 256 << 20
            let disk = try DiskRate.ofSyncedWrites(bytes: size, in: server.dataDirectory)
            let (up, down) = try await Transfers.largeFile(pair, bytes: size)
            let rate = { (seconds: Double) in Double(size) / seconds / 1_048_576 }
            table.add(
                "256 MB up through A's engine (MB/s, share of the disk's rate)",
                String(format: "%.0f MB/s (%.0f%% of %.0f MB/s)", rate(up), 100 * rate(up) / disk, disk), target: "≥ 40%",
                met: rate(up) >= 0.4 * disk)
            table.add(
                "256 MB down to B's engine (MB/s, share of the disk's rate)",
                String(format: "%.0f MB/s (%.0f%% of %.0f MB/s)", rate(down), 100 * rate(down) / disk, disk), target: "≥ 40%",
                met: rate(down) >= 0.4 * disk)
        }
        if wanted("edit") {
            let pair = try await DevicePair(server, name: "edit")
            let sent = try await oneByteEdit(pair, bytes: 64 << 20, blobs: server.dataDirectory.appendingPathComponent("blobs"))
            let bound = 2 * ContentDefinedChunker.standard.averageSize + (64 << 10)
            table.add(
                "Bytes sent for a 1-byte edit in a 64 MB file", String(format: "%.2f MB (bound %.2f MB)", mb(sent), mb(bound)),
                target: "≤ 2 chunks + 64 KiB", met: sent <= bound)
        }
        if selected.contains("scan") {
            for files in [11_000, 100_000] {
                let figures = try ScanBenchmark.run(files: files)
                table.add(
                    "A round's scan of \(files.formatted()) unchanged files (median of 5)",
                    String(
                        format: "%.0f ms (floor: listing and lstat of every entry, %.0f ms; %.1f×)", figures.scan.milliseconds,
                        figures.floor.milliseconds, figures.scan.milliseconds / figures.floor.milliseconds),
                    target: "(reference)", met: true)
            }
        }
        if selected.contains("chunking") {
            let figures = try await ChunkingBenchmark.run()
            let rate = { (time: Duration) in String(format: "%.0f MB/s", Double(figures.bytes) / time.milliseconds / 1_000) }
            // The pass does each part once per byte and SHA-256 twice (the chunk's, the whole file's).
            let floor = figures.cuts + figures.hash * 2 + figures.read
            table.add(
                "A 256 MB file read, cut into chunks, each chunk and the whole hashed (median of 5)",
                "\(rate(figures.pass)) (floor, its parts one after another: \(rate(floor)); cuts \(rate(figures.cuts)), "
                    + "SHA-256 \(rate(figures.hash)), read \(rate(figures.read)))",
                target: "(reference)", met: true)
        }
        if selected.contains("webdav") {
            try await WebDAVComparison(server: server).run(into: &table)
        }
        if selected.contains("peers") || selected.contains("peers-scale") {
            try await PeerComparison(server: server, nimbus: nimbus, scale: selected.contains("peers-scale")).run(into: &table)
        }
        if selected.contains("peers-large") {
            try await LargeFileRepeats.run(server: server, nimbus: nimbus, pairs: 5, into: &table)
        }
        if selected.contains("peers-memory") {
            try await PeerComparison.nimbusMemory(server: server, nimbus: nimbus, into: &table)
        }
        if selected.contains("scale") {
            let figures = try await ScaleBenchmark(server: server, nimbus: nimbus, files: 100_000).run()
            let seconds = { (duration: Duration) in duration.milliseconds / 1000 }
            table.add(
                "Scale: writing 100,000 files of 1 KiB on A (reference)", String(format: "%.1f s", seconds(figures.write)),
                target: "(reference)", met: true)
            table.add(
                "Scale: first sync up, A's engine (files/s)",
                String(format: "%.1f s (%.0f files/s)", seconds(figures.up), 100_000 / seconds(figures.up)),
                target: "(reference)", met: true)
            table.add(
                "Scale: first sync down, a `nimbus device run` daemon",
                String(format: "%.1f s (%.0f files/s)", seconds(figures.down), 100_000 / seconds(figures.down)),
                target: "(reference)", met: true)
            let rescan = figures.rescans.map(seconds).sorted()[1]
            table.add(
                "Scale: a round with nothing changed, 100,000 files (median of 3)", String(format: "%.2f s", rescan),
                target: "≤ 3 s",
                met: rescan <= 3)
            table.add(
                "Scale: the daemon's resident memory idle after the first sync (peak during it; of which heap)",
                String(
                    format: "%.1f MB (%.1f MB; %.1f MB)", mb(figures.resident), mb(figures.peakResident),
                    mb(figures.peakAnonymous)),
                target: "≤ 100 MB",
                met: figures.resident <= 100 << 20)
        }
        print(table.render())
    }

    static func mb(_ bytes: Int) -> Double { Double(bytes) / 1_048_576 }

    /// Seconds a file of a batch of `files` new 4 KiB files spends in its bundle upload and in its commit
    /// (medians of `rounds`), straight through the document client: no engine, no disk.
    static func commitFloor(_ pair: DevicePair, files: Int, rounds: Int) async throws -> (upload: Double, commit: Double) {
        var (uploads, commits): ([Double], [Double]) = ([], [])
        var generator = SystemRandomNumberGenerator()
        for round in 0..<rounds {
            let chunks = (0..<files).map { _ in
                let bytes = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
                return ChunkBundle.Chunk(hash: Secrets.hex(SHA256.hash(data: bytes)), bytes: bytes)
            }
            let folder = "floor-\(round)"
            let operations =
                [DocumentOperation(.save, itemID: folder, name: folder, kind: .folder)]
                + chunks.enumerated().map { index, chunk in
                    DocumentOperation(
                        .save, itemID: "\(folder)-\(index)", parentID: folder, name: "f\(index).bin", kind: .file,
                        content: DocumentContent(
                            contentHash: chunk.hash, size: 4096, chunks: [DocumentChunk(hash: chunk.hash, size: 4096)],
                            modifiedAt: 1_000))
                }
            let start = ContinuousClock.now
            try await pair.a.client.upload(bundle: chunks)
            let uploaded = ContinuousClock.now
            let response = try await pair.a.client.modify(operations, device: "a")
            guard response.results.allSatisfy({ $0.outcome == .applied }) else { throw BenchmarkError("a save failed") }
            uploads.append((uploaded - start).milliseconds / 1000 / Double(files))
            commits.append((ContinuousClock.now - uploaded).milliseconds / 1000 / Double(files))
        }
        return (Percentiles(uploads).at(50), Percentiles(commits).at(50))
    }

    /// Seconds from the first of `count` files written on A until B holds them all.
    static func manySmallFiles(_ pair: DevicePair, count: Int, size: Int) async throws -> Double {
        let start = ContinuousClock.now
        for index in 0..<count {
            try pair.a.write("Documents/Small/s\(index).bin", Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* index) }))
        }
        let last = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* (count - 1)) })
        try await pair.b.waitFor("Documents/Small/s\(count - 1).bin", last)
        for index in 0..<count {
            try await pair.b.waitFor(
                "Documents/Small/s\(index).bin", Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* index) }))
        }
        return (ContinuousClock.now - start).milliseconds / 1000
    }

    /// Chunk bytes the server received for a one-byte change in the middle of a file A already synced.
    static func oneByteEdit(_ pair: DevicePair, bytes: Int, blobs: URL) async throws -> Int {
        var generator = SystemRandomNumberGenerator()
        var content = Data((0..<bytes / 8).flatMap { _ in withUnsafeBytes(of: generator.next()) { Array($0) } })
        try pair.a.write("Documents/Edited.bin", content)
        _ = try await pair.a.engine.sync()
        let before = try storedBytes(blobs)
        content[content.count / 2] ^= 0xFF
        try pair.a.write("Documents/Edited.bin", content)
        _ = try await pair.a.engine.sync()
        return try storedBytes(blobs) - before
    }

    static func storedBytes(_ directory: URL) throws -> Int {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: [.fileSizeKey]).reduce(0) {
            $0 + (try $1.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0)
        }
    }

    /// CPU time this process has used (user and system).
    static func ownCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }

    /// Seconds to create (and close) one empty file in `directory`, the median of five runs of 200. Each
    /// small file synced costs three (written on A, stored as a chunk by the server, downloaded into a
    /// temporary file on B); on this machine's journal-less ext4 a creation swings from 20 µs to over
    /// 200 µs of kernel time (its search for an inode not recently freed).
    static func fileCreation(in directory: URL) throws -> Double {
        let folder = directory.appendingPathComponent("creation-probe")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var runs: [Double] = []
        for run in 0..<5 {
            let start = ContinuousClock.now
            for index in 0..<200 {
                let descriptor = open(folder.appendingPathComponent("\(run)-\(index)").path, O_WRONLY | O_CREAT, 0o600)
                guard descriptor >= 0 else { throw BenchmarkError("cannot create a file in \(folder.path)") }
                close(descriptor)
            }
            runs.append((ContinuousClock.now - start).milliseconds / 1000 / 200)
        }
        return Percentiles(runs).at(50)
    }
}
