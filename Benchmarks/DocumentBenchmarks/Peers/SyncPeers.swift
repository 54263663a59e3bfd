import BenchmarkSupport
import Crypto
import Foundation
import NimbusCore

/// Two folders on this machine kept in sync by one system: two Nimbus device daemons through a server, or
/// two Syncthing instances. The same writer and checker (`PeerWorkloads`) measure each, so their rows
/// compare like with like.
protocol SyncPeers: AnyObject {
    var name: String { get }
    /// The folder the writer writes in.
    var a: URL { get }
    /// The folder the checker waits on.
    var b: URL { get }
    /// Each process the system runs, by role, for its memory.
    var processes: [(role: String, pid: Int32)] { get }
    func stop()
}

/// The side-by-side workloads: files written into A, and the time until B holds the same bytes.
enum PeerWorkloads {
    /// Milliseconds from writing each 1 KiB file on A until B holds it, one file at a time.
    static func oneFileLatencies(_ peers: some SyncPeers, files: Int) async throws -> [Double] {
        var latencies: [Double] = []
        for index in 0..<files {
            let bytes = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &+ index) })
            let path = "single/file-\(index).txt"
            let start = ContinuousClock.now
            try write(bytes, to: peers.a.appendingPathComponent(path))
            try await waitUntil(timeout: .seconds(120), "\(path) on B") {
                FileManager.default.contents(atPath: peers.b.appendingPathComponent(path).path) == bytes
            }
            latencies.append((ContinuousClock.now - start).milliseconds)
        }
        return latencies
    }

    /// Seconds from writing `count` files of `size` bytes into a new folder on A until B holds every one.
    static func manyFiles(_ peers: some SyncPeers, count: Int, size: Int, folder: String) async throws -> Double {
        let start = ContinuousClock.now
        for index in 0..<count {
            var bytes = Data(repeating: UInt8(truncatingIfNeeded: index), count: size)
            withUnsafeBytes(of: UInt64(index)) { bytes.replaceSubrange(0..<8, with: $0) }
            try write(bytes, to: peers.a.appendingPathComponent("\(folder)/\(index / 1000)/file-\(index).bin"))
        }
        let target = peers.b.appendingPathComponent(folder)
        try await waitUntil(timeout: .seconds(3600), every: .milliseconds(100), "\(count) files on B") {
            arrivedFiles(in: target) == count
        }
        let elapsed = (ContinuousClock.now - start).milliseconds / 1000
        for index in 0..<count {
            let path = "\(folder)/\(index / 1000)/file-\(index).bin"
            guard
                FileManager.default.contents(atPath: peers.b.appendingPathComponent(path).path)
                    == FileManager.default.contents(atPath: peers.a.appendingPathComponent(path).path)
            else { throw BenchmarkError("\(path) differs on B") }
        }
        return elapsed
    }

    /// Seconds from writing one file of `size` bytes on A until B holds it whole (its SHA-256 checked); `started`
    /// is told when the writing begins.
    static func largeFile(
        _ peers: some SyncPeers, size: Int, path: String, seed: UInt64 = 0,
        started: (ContinuousClock.Instant) -> Void = { _ in }
    ) async throws -> Double {
        let bytes = pseudorandom(size, seed: seed)
        let digest = SHA256.hash(data: bytes)
        let start = ContinuousClock.now
        started(start)
        try write(bytes, to: peers.a.appendingPathComponent(path))
        let target = peers.b.appendingPathComponent(path)
        try await waitUntil(timeout: .seconds(600), every: .milliseconds(20), "\(path) on B") {
            fileSize(target) == size && SHA256.hash(data: (try? Data(contentsOf: target)) ?? Data()) == digest
        }
        return (ContinuousClock.now - start).milliseconds / 1000
    }

    /// A file of `size` bytes synced to B, then one byte in its middle changed on A: the seconds until B
    /// holds the change, and the bytes that crossed loopback meanwhile (every exchange the edit took, both
    /// ways; nothing else on this machine talks over loopback during the run).
    static func oneByteEdit(_ peers: some SyncPeers, size: Int) async throws -> (seconds: Double, bytes: Int) {
        let path = "edited/file.bin"
        _ = try await largeFile(peers, size: size, path: path)
        let file = peers.a.appendingPathComponent(path)
        let handle = try FileHandle(forUpdating: file)
        let before = try loopbackBytes()
        let start = ContinuousClock.now
        try handle.seek(toOffset: UInt64(size / 2))
        let old = try handle.read(upToCount: 1)![0]
        try handle.seek(toOffset: UInt64(size / 2))
        try handle.write(contentsOf: Data([old ^ 0xFF]))
        try handle.close()
        let target = peers.b.appendingPathComponent(path)
        try await waitUntil(timeout: .seconds(600), "the edit on B") {
            guard let changed = try? FileHandle(forReadingFrom: target) else { return false }
            defer { try? changed.close() }
            try? changed.seek(toOffset: UInt64(size / 2))
            return (try? changed.read(upToCount: 1))?.first == old ^ 0xFF
        }
        let seconds = (ContinuousClock.now - start).milliseconds / 1000
        // What follows the byte (acknowledgements, the commit's push) counts too: until a second passes with
        // no traffic, or ten.
        var moved = try loopbackBytes()
        for _ in 0..<10 {
            try await Task.sleep(for: .seconds(1))
            let now = try loopbackBytes()
            if now == moved { break }
            moved = now
        }
        return (seconds, moved - before)
    }

    /// Each process's peak resident memory so far and its resident memory now, in bytes, its descendants'
    /// added (Syncthing runs as a monitor process and the process it monitors).
    static func memory(_ peers: some SyncPeers) -> [(role: String, peak: Int, resident: Int)] {
        peers.processes.map { process in
            ([process.pid] + descendants(of: process.pid)).reduce(into: (process.role, 0, 0)) { total, pid in
                let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
                func kilobytes(_ field: String) -> Int {
                    status.split(separator: "\n").first { $0.hasPrefix(field) }?.split(separator: " ").dropFirst().first
                        .flatMap { Int($0) } ?? 0
                }
                total.1 += kilobytes("VmHWM:") * 1024
                total.2 += kilobytes("VmRSS:") * 1024
            }
        }
    }

    /// Every process below `pid`, from each process's parent in `/proc/N/stat`.
    static func descendants(of pid: Int32) -> [Int32] {
        let all = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }
        let parents = Dictionary(
            uniqueKeysWithValues: all.compactMap { child -> (Int32, Int32)? in
                guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")"),
                    let parent = stat[stat.index(after: close)...].split(separator: " ").dropFirst().first.flatMap({ Int32($0) })
                else { return nil }
                return (child, parent)
            })
        var found: [Int32] = []
        var frontier = [pid]
        while let next = frontier.popLast() {
            let children = parents.filter { $0.value == next }.map(\.key)
            found += children
            frontier += children
        }
        return found
    }

    /// Bytes received on the loopback interface so far (`/proc/net/dev`).
    static func loopbackBytes() throws -> Int {
        let table = try String(contentsOfFile: "/proc/net/dev", encoding: .utf8)
        guard let line = table.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("lo:") }),
            let received = line.split(separator: ":")[1].split(separator: " ").first.flatMap({ Int($0) })
        else { throw BenchmarkError("no loopback interface in /proc/net/dev") }
        return received
    }

    static func write(_ bytes: Data, to file: URL) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bytes.write(to: file)
    }

    /// Bytes that do not repeat in any way a chunker or compressor could exploit; each seed's share no chunk.
    static func pseudorandom(_ size: Int, seed: UInt64 = 0) -> Data {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ (seed &* 0xD1B5_4A32_D192_ED03)
        var bytes = Data(count: size)
        bytes.withUnsafeMutableBytes { buffer in
            let words = buffer.bindMemory(to: UInt64.self)
            for index in words.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[index] = state
            }
        }
        return bytes
    }

    /// How many files the writer's names (`file-N.bin`) the folder's subfolders hold. Both systems write a
    /// file under a temporary name and rename it into place, so a name is a whole file; names only, as a
    /// listing every 100 ms must not take the CPU the sync needs.
    static func arrivedFiles(in folder: URL) -> Int {
        let subfolders = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return subfolders.reduce(0) { count, subfolder in
            let names =
                (try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent(subfolder).path)) ?? []
            return count + names.filter { $0.hasPrefix("file-") && $0.hasSuffix(".bin") }.count
        }
    }

    static func fileSize(_ file: URL) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: file.path)[.size]) as? Int
    }

    /// Polls `condition` every `interval` until it holds; throws past `timeout`.
    static func waitUntil(
        timeout: Duration, every interval: Duration = .milliseconds(2), _ what: String, _ condition: () -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("\(what) did not arrive within \(timeout)") }
            try await Task.sleep(for: interval)
        }
    }
}
