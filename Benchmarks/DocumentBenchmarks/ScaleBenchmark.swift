import BenchmarkSupport
import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit

/// A container of many files: the first sync up through an engine, the first sync down through a real
/// `nimbus device run` process (whose memory is read from /proc), and a round with nothing changed.
struct ScaleBenchmark {
    let server: ServerProcess
    let nimbus: URL
    let files: Int

    struct Figures {
        var write: Duration
        var up: Duration
        var rescans: [Duration]
        var down: Duration
        var peakResident: Int
        var resident: Int
        /// The largest heap-and-stack part of the resident memory seen, sampled every 20 ms (a round over
        /// 100,000 files holds its peak for well under a second: sampled every 200 ms, it was missed).
        var peakAnonymous: Int
    }

    func run() async throws -> Figures {
        let pair = try await DevicePair(server, name: "scale")
        let perFolder = 1_000
        let writeStart = ContinuousClock.now
        for index in 0..<files {
            let text = "file \(index) of the scale benchmark " + String(repeating: "·", count: 1_000)
            try pair.a.write("Documents/Folder \(index / perFolder)/File \(index).txt", Data(text.utf8))
        }
        let write = ContinuousClock.now - writeStart
        let upStart = ContinuousClock.now
        guard try await pair.a.engine.sync(rounds: 200) else { throw BenchmarkError("device A did not settle") }
        let up = ContinuousClock.now - upStart
        var rescans: [Duration] = []
        for _ in 0..<3 {
            let start = ContinuousClock.now
            guard try await !pair.a.engine.syncOnce() else { throw BenchmarkError("a round with nothing changed planned work") }
            rescans.append(ContinuousClock.now - start)
        }
        let (down, peak, resident, anonymous) = try await downloadThroughDaemon()
        return Figures(
            write: write, up: up, rescans: rescans, down: down, peakResident: peak, resident: resident, peakAnonymous: anonymous)
    }

    /// Signs a new device in with the CLI, runs its daemon on an empty root and waits until it says it is
    /// up to date and holds every file: how long that took, and the daemon's peak and final resident memory.
    private func downloadThroughDaemon() async throws -> (Duration, Int, Int, Int) {
        let root = server.dataDirectory.deletingLastPathComponent().appendingPathComponent(
            "nimbus-bench-scale-\(UUIDString.random())")
        let config = root.appendingPathComponent("config").path
        try ServerProcess.runCommand(
            nimbus,
            [
                "login", "--config", config, "--server", server.url.absoluteString, "--email", "scale@bench.local", "--password",
                ServerProcess.password, "--device-name", "tablet", "--api-token", server.apiToken, "--container",
                server.container,
            ])
        let daemon = Process()
        daemon.executableURL = nimbus
        daemon.arguments = [
            "device", "run", "--config", config, "--server", server.url.absoluteString, "--root", root.path, "--rescan-seconds",
            "600",
        ]
        daemon.standardError = FileHandle.nullDevice
        let start = ContinuousClock.now
        try daemon.run()
        defer { daemon.terminate() }
        let socket = ControlSocket.path(root: root)
        let folder = root.appendingPathComponent("Mobile Documents").appendingPathComponent(
            server.container.replacingOccurrences(of: ".", with: "~"))
        let deadline = ContinuousClock.now + .seconds(3_600)
        let statusFile = "/proc/\(daemon.processIdentifier)/status"
        let sampler = Task {
            var peak = 0
            while !Task.isCancelled {
                if let memory = try? String(contentsOfFile: statusFile, encoding: .utf8) {
                    peak = max(peak, Self.kilobytes("RssAnon:", memory) * 1024)
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return peak
        }
        defer { sampler.cancel() }
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            guard let status = (try? DaemonConnection.ask(ControlRequest(command: .status), at: socket))?.folders?.first,
                status.pending == 0, status.lastSyncedAt != nil, status.problem == nil
            else { continue }
            if count(folder) == files {
                let elapsed = ContinuousClock.now - start
                // Resident memory once the daemon idles: its CPU time unchanged for a second.
                var cpu = try cpuTicks(daemon.processIdentifier)
                var still = 0
                while still < 5 {
                    try await Task.sleep(for: .milliseconds(200))
                    let now = try cpuTicks(daemon.processIdentifier)
                    still = now == cpu ? still + 1 : 0
                    cpu = now
                }
                let memory = try String(contentsOfFile: statusFile, encoding: .utf8)
                sampler.cancel()
                return (
                    elapsed, Self.kilobytes("VmHWM:", memory) * 1024, Self.kilobytes("VmRSS:", memory) * 1024, await sampler.value
                )
            }
        }
        throw BenchmarkError("the daemon did not download the container within an hour")
    }

    private func cpuTicks(_ process: Int32) throws -> String {
        let stat = try String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return "\(fields[11]) \(fields[12])"
    }

    private func count(_ folder: URL) -> Int {
        var files = 0
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        while let path = enumerator?.nextObject() as? String {
            if path.hasSuffix(".txt") { files += 1 }
        }
        return files
    }

    private static func kilobytes(_ field: String, _ status: String) -> Int {
        status.split(separator: "\n").first { $0.hasPrefix(field) }?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            ?? 0
    }
}
