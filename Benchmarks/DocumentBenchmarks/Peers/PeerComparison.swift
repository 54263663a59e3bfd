import BenchmarkSupport
import Foundation
import NimbusCore

/// Nimbus beside Syncthing in one run (`docs peers`; `docs peers-scale` adds the first sync of 100,000
/// files): the same writer and checker against two Nimbus device daemons through one server and two
/// Syncthing instances, each row's figure on both sides and their ratio.
struct PeerComparison {
    let server: ServerProcess
    let nimbus: URL
    let scale: Bool

    struct Side {
        var single: [Double] = []
        var thousand = 0.0
        var tenThousand = 0.0
        var large = 0.0
        var edit: (seconds: Double, bytes: Int) = (0, 0)
        var hundredThousand: Double?
        var memory: [(role: String, peak: Int, resident: Int)] = []
    }

    func run(into table: inout ResultTable) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-peers-\(UUIDString.random())")
        defer { try? FileManager.default.removeItem(at: root) }
        let syncthing = try await measure(try await SyncthingPeers(in: root))
        let nimbus = try await measure(try await NimbusDaemonPeers(server: server, nimbus: self.nimbus, in: root))

        func row(_ title: String, _ nimbusFigure: Double, _ syncthingFigure: Double, unit: String, format: String) {
            let ratio = syncthingFigure / nimbusFigure
            table.add(
                title,
                String(
                    format: "Nimbus \(format) \(unit), Syncthing \(format) \(unit): %@", nimbusFigure, syncthingFigure,
                    ratio >= 1 ? String(format: "%.1f× faster", ratio) : String(format: "%.2f× (slower)", ratio)),
                target: "≥ 1×", met: ratio >= 1)
        }
        row(
            "A → B, one 1 KiB file, p50 of 20", Percentiles(nimbus.single).at(50), Percentiles(syncthing.single).at(50),
            unit: "ms", format: "%.1f")
        row("A → B, 1,000 files of 4 KiB", nimbus.thousand, syncthing.thousand, unit: "s", format: "%.2f")
        row("A → B, 10,000 files of 1 KiB", nimbus.tenThousand, syncthing.tenThousand, unit: "s", format: "%.1f")
        row("A → B, one 256 MB file", nimbus.large, syncthing.large, unit: "s", format: "%.2f")
        row(
            "A → B, a 1-byte edit in the middle of a 64 MB file", nimbus.edit.seconds, syncthing.edit.seconds, unit: "s",
            format: "%.2f")
        table.add(
            "Bytes over loopback for that edit (both ways, everything it took)",
            String(
                format: "Nimbus %.2f MB, Syncthing %.2f MB", Double(nimbus.edit.bytes) / 1e6, Double(syncthing.edit.bytes) / 1e6),
            target: "(reference)", met: true)
        if let ours = nimbus.hundredThousand, let theirs = syncthing.hundredThousand {
            row("First sync of 100,000 files of 1 KiB", ours, theirs, unit: "s", format: "%.1f")
        }
        for (name, side) in [("Nimbus", nimbus), ("Syncthing", syncthing)] {
            table.add(
                "\(name): peak / idle resident memory per process",
                side.memory.map { String(format: "%@ %.0f / %.0f MB", $0.role, Double($0.peak) / 1e6, Double($0.resident) / 1e6) }
                    .joined(separator: ", "), target: "(reference)", met: true)
        }
    }

    /// The first sync of 100,000 files of 1 KiB through the two Nimbus daemons alone (`docs peers-memory`), and each
    /// process's peak and idle memory: the scale row's memory without the hour Syncthing's side and the other rows take.
    static func nimbusMemory(server: ServerProcess, nimbus: URL, into table: inout ResultTable) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-peers-\(UUIDString.random())")
        defer { try? FileManager.default.removeItem(at: root) }
        let peers = try await NimbusDaemonPeers(server: server, nimbus: nimbus, in: root)
        defer { peers.stop() }
        let seconds = try await PeerWorkloads.manyFiles(peers, count: 100_000, size: 1024, folder: "hundred-thousand")
        try await Task.sleep(for: .seconds(5))
        table.add(
            "Nimbus alone: first sync of 100,000 files of 1 KiB, A → B", String(format: "%.1f s", seconds), target: "(reference)",
            met: true)
        for (role, peak, resident) in PeerWorkloads.memory(peers) {
            let daemon = role != "server"
            table.add(
                "Nimbus alone: \(role)'s peak / idle resident memory",
                String(format: "%.0f / %.0f MB", Double(peak) / 1e6, Double(resident) / 1e6),
                target: daemon ? "peak ≤ 100 MB" : "(reference)", met: !daemon || peak <= 100_000_000)
        }
    }

    /// Every workload on `peers`, then its processes' memory once they idle; stops them.
    private func measure(_ peers: some SyncPeers) async throws -> Side {
        defer { peers.stop() }
        var side = Side()
        FileHandle.standardError.write(Data("… \(peers.name): one file at a time\n".utf8))
        side.single = try await PeerWorkloads.oneFileLatencies(peers, files: 20)
        FileHandle.standardError.write(Data("… \(peers.name): many files\n".utf8))
        side.thousand = try await PeerWorkloads.manyFiles(peers, count: 1_000, size: 4096, folder: "thousand")
        side.tenThousand = try await PeerWorkloads.manyFiles(peers, count: 10_000, size: 1024, folder: "ten-thousand")
        FileHandle.standardError.write(Data("… \(peers.name): a large file and an edit\n".utf8))
        side.large = try await PeerWorkloads.largeFile(peers, size: 256 << 20, path: "large/file.bin")
        side.edit = try await PeerWorkloads.oneByteEdit(peers, size: 64 << 20)
        if scale {
            FileHandle.standardError.write(Data("… \(peers.name): 100,000 files\n".utf8))
            side.hundredThousand = try await PeerWorkloads.manyFiles(
                peers, count: 100_000, size: 1024, folder: "hundred-thousand")
        }
        // Idle: a few seconds with nothing written.
        try await Task.sleep(for: .seconds(5))
        side.memory = PeerWorkloads.memory(peers)
        return side
    }
}
