import BenchmarkSupport
import Foundation
import NimbusCore
import Synchronization

/// The 256 MB row again and again (`docs peers-large`), Syncthing and Nimbus taking turns, each file of new bytes:
/// its ratio moves with the host's speed more than any other row's, so one run's figure says little alone. Beside
/// each time, when B's copy began and when the file was in place, from B's folder as a watcher sees it.
enum LargeFileRepeats {
    static let size = 256 << 20

    static func run(server: ServerProcess, nimbus: URL, pairs: Int, into table: inout ResultTable) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-peers-\(UUIDString.random())")
        defer { try? FileManager.default.removeItem(at: root) }
        let syncthing = try await SyncthingPeers(in: root)
        defer { syncthing.stop() }
        let ours = try await NimbusDaemonPeers(server: server, nimbus: nimbus, in: root)
        defer { ours.stop() }
        // The earlier rows' files, so that each round scans a folder of the side-by-side run's size.
        for peers in [syncthing as any SyncPeers, ours] {
            _ = try await PeerWorkloads.manyFiles(peers, count: 1_000, size: 4096, folder: "thousand")
            _ = try await PeerWorkloads.manyFiles(peers, count: 10_000, size: 1024, folder: "ten-thousand")
        }
        var ratios: [Double] = []
        for pair in 0..<pairs {
            let theirs = try await timed(syncthing, seed: UInt64(2 * pair + 1), path: "repeats/syncthing-\(pair).bin")
            let mine = try await timed(ours, seed: UInt64(2 * pair + 2), path: "repeats/nimbus-\(pair).bin")
            let ratio = theirs.total / mine.total
            ratios.append(ratio)
            table.add(
                "A → B, one 256 MB file, pair \(pair + 1) of \(pairs)",
                String(
                    format: "Nimbus %.2f s (B's copy began %.2f s, in place %.2f s), Syncthing %.2f s (%.2f s, %.2f s): %@",
                    mine.total, mine.began, mine.placed, theirs.total, theirs.began, theirs.placed,
                    ratio >= 1 ? String(format: "%.2f× faster", ratio) : String(format: "%.2f× (slower)", ratio)),
                target: "≥ 1×", met: ratio >= 1)
        }
        table.add(
            "A → B, one 256 MB file: the pairs' ratios, lowest / median / highest",
            String(
                format: "%.2f× / %.2f× / %.2f×", ratios.min() ?? 0, Percentiles(ratios).at(50), ratios.max() ?? 0),
            target: "(reference)", met: true)
    }

    /// Seconds from the writer's start until B holds the file checked whole, until B's copy first held bytes (its
    /// temporary file, under either system's own name), and until the file was in place under its name.
    private static func timed(_ peers: some SyncPeers, seed: UInt64, path: String) async throws -> (
        total: Double, began: Double, placed: Double
    ) {
        // The writer's start, once the bytes are made; then when B's copy began and was in place.
        let marks = Mutex<(start: ContinuousClock.Instant?, began: Double?, placed: Double?)>((nil, nil, nil))
        let watching = Atomic(true)
        let target = peers.b.appendingPathComponent(path)
        let folders = [peers.b, target.deletingLastPathComponent()]
        // A thread of its own, every 3 ms: on the cooperative threads it would wait behind the checker's hashing.
        let watcher = Thread {
            while watching.load(ordering: .relaxed) {
                let now = ContinuousClock.now
                let copying = folders.contains { folder in
                    ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).contains { name in
                        (name.hasPrefix(DocumentNames.temporaryPrefix) || name.hasPrefix(".syncthing.")
                            || name.hasPrefix("~syncthing~"))
                            && (PeerWorkloads.fileSize(folder.appendingPathComponent(name)) ?? 0) > 0
                    }
                }
                let placed = PeerWorkloads.fileSize(target) == size
                marks.withLock { marks in
                    guard let start = marks.start else { return }
                    let elapsed = (now - start).milliseconds / 1000
                    if copying && marks.began == nil { marks.began = elapsed }
                    if placed && marks.placed == nil { marks.placed = elapsed }
                }
                usleep(3_000)
            }
        }
        watcher.start()
        defer { watching.store(false, ordering: .relaxed) }
        let total = try await PeerWorkloads.largeFile(peers, size: size, path: path, seed: seed) { start in
            marks.withLock { $0.start = start }
        }
        watching.store(false, ordering: .relaxed)
        // Settled before the next file: the daemons' rounds after this one, Syncthing's index exchange.
        try await Task.sleep(for: .seconds(3))
        let (_, began, placed) = marks.withLock { $0 }
        return (total, began ?? .nan, placed ?? .nan)
    }
}
