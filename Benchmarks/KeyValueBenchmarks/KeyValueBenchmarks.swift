import Foundation
import HTTPTypes
import Logging
import NimbusCore
import NimbusKit
import BenchmarkSupport
import Synchronization
import WSClient

/// Key-value store benchmarks against a real `nimbus serve` (release build) on loopback.
///
///     swift build -c release && .build/release/KeyValueBenchmarks
@main
enum KeyValueBenchmarks {
    static func main() async throws {
        let nimbus = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus")
        guard FileManager.default.isExecutableFile(atPath: nimbus.path) else {
            print("build the nimbus executable first: swift build -c release")
            exit(1)
        }
        // The benchmark measures capacity, not policy: per-session and per-token rate limits are lifted.
        let server = try await ServerProcess(
            nimbus: nimbus, port: Int.random(in: 20000...40000),
            extraArguments: ["--session-rate", "1000000", "--token-rate", "1000000"])
        defer { server.stop() }
        var table = ResultTable()
        // Name benchmarks on the command line (memory, propagation, throughput) to run only those.
        let selected = Set(CommandLine.arguments.dropFirst())
        func wanted(_ name: String) -> Bool { selected.isEmpty || selected.contains(name) }

        if wanted("memory") {
            let idle = try await idleMemory(server)
            let megabytes = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
            table.add(
                "Idle server RSS (anonymous part)", "\(megabytes(idle.total)) (\(megabytes(idle.anonymous)))", target: "≤ 40 MB",
                met: idle.total <= 40 * 1_048_576)
        }
        if wanted("propagation") {
            let propagation = try await KeyValueLoad.propagationLatencies(from: server, to: server, changes: 1000)
            table.add(
                "Propagation p50 (1,000 changes)", String(format: "%.2f ms", propagation.at(50)), target: "≤ 5 ms",
                met: propagation.at(50) <= 5)
            table.add(
                "Propagation p99 (1,000 changes)", String(format: "%.2f ms", propagation.at(99)), target: "≤ 25 ms",
                met: propagation.at(99) <= 25)
        }
        if wanted("throughput") {
            // Loopback figures on a shared 2-core machine vary by ±10% from run to run: each is the
            // median of several runs, with the range shown.
            try await server.floorRows(into: &table)
            var cpuPerBatch = [Double]()
            let sequential = try await median(runs: 5) {
                let run = try await KeyValueLoad.writes(
                    through: [server], clients: 1, batchesPerClient: 3000, watching: [ProcessCPU(pid: server.pid)])
                cpuPerBatch.append(run.cpuSeconds[0] / Double(run.batches) * 1_000_000)
                return run.batchesPerSecond
            }
            table.add("Sequential batches/s (1 client)", sequential.text, target: "≥ 2,000", met: sequential.median >= 2000)
            table.add(
                "Server CPU per sequential batch", String(format: "%.0f µs", Percentiles(cpuPerBatch).at(50)),
                target: "(reference)", met: true)
            let concurrent = try await median(runs: 3) {
                try await KeyValueLoad.writes(through: [server], clients: 16, batchesPerClient: 1000).batchesPerSecond
            }
            table.add("Concurrent batches/s (16 clients)", concurrent.text, target: "≥ 5,000", met: concurrent.median >= 5000)
        }
        if wanted("hostile") {
            try await hostileConnectionRows(server, into: &table)
        }
        if wanted("memory") {
            let perConnection = try await pushConnectionMemory(server, connections: 1000)
            table.add(
                "RSS per push connection (1,000 open)", "\(perConnection / 1024) KB", target: "≤ 40 KB",
                met: perConnection <= 40 * 1024)
        }

        print(table.render())
    }

    /// `/health` and a signed-in key-value write, p99 of sequential requests, on an idle server and while
    /// 2,000 slow connections (a request head a byte a second, from eight other client addresses) are held
    /// open, reopened as the server's head timeout (10 s) closes them; measured idle, held, idle, held
    /// (about 15 s each), so the host's drift falls on both. Also the server's CPU per second in each.
    @MainActor
    static func hostileConnectionRows(_ server: ServerProcess, into table: inout ResultTable) async throws {
        let probe = try await ResponsivenessProbe(server, user: "hostile@bench.local")
        var (idle, held) = (ResponsivenessProbe.Latencies(), ResponsivenessProbe.Latencies())
        var openDuring = [Int]()
        var reopened = 0
        var cpu = (idle: [Double](), held: [Double]())
        func measured(_ body: () async throws -> ResponsivenessProbe.Latencies) async throws -> (
            ResponsivenessProbe.Latencies, Double
        ) {
            let (start, before) = (ContinuousClock.now, try server.cpuSeconds())
            let result = try await body()
            return (result, (try server.cpuSeconds() - before) / ((ContinuousClock.now - start).milliseconds / 1000))
        }
        for _ in 0..<2 {
            let (quiet, quietCPU) = try await measured { try await probe.measure(rounds: 3000) }
            idle += quiet
            cpu.idle.append(quietCPU)
            let slow = SlowClients()
            FileHandle.standardError.write(Data("[\(Date())] opening 2,000 slow connections\n".utf8))
            try await slow.start(
                port: server.url.port!, count: 2000, addresses: (2...9).map { "127.0.0.\($0)" }, interval: .seconds(1))
            openDuring.append(slow.counts.open)
            let (busy, busyCPU) = try await measured { try await probe.measure(rounds: 3000) }
            openDuring.append(slow.counts.open)
            reopened += slow.counts.opened - 2000
            held += busy
            cpu.held.append(busyCPU)
            await slow.stop()
        }
        let (idleHealth, heldHealth) = (Percentiles(idle.health), Percentiles(held.health))
        let (idleWrite, heldWrite) = (Percentiles(idle.write), Percentiles(held.write))
        table.add(
            "GET /health p99, idle / 2,000 slow connections open",
            String(format: "%.2f / %.2f ms", idleHealth.at(99), heldHealth.at(99)),
            target: "≤ 10 ms held", met: heldHealth.at(99) <= 10)
        table.add(
            "Key-value write p99, idle / 2,000 slow connections open",
            String(format: "%.2f / %.2f ms", idleWrite.at(99), heldWrite.at(99)),
            target: "≤ 10 ms held", met: heldWrite.at(99) <= 10)
        table.add(
            "Slow connections open while measuring (min), reopened after the head timeout",
            "\(openDuring.min() ?? 0), \(reopened)", target: "≥ 1,900", met: (openDuring.min() ?? 0) >= 1900)
        table.add(
            "Server CPU, idle / slow connections held (cores, with the measuring requests)",
            String(format: "%.2f / %.2f", cpu.idle.reduce(0, +) / 2, cpu.held.reduce(0, +) / 2), target: "(reference)", met: true)
    }

    static func idleMemory(_ server: ServerProcess) async throws -> (total: Int, anonymous: Int) {
        try await Task.sleep(for: .seconds(1))
        return try server.residentBytes()
    }

    /// Resident memory the server adds per open push socket.
    static func pushConnectionMemory(_ server: ServerProcess, connections: Int) async throws -> Int {
        let session = try await server.signIn("push@bench.local", device: "many sockets")
        try await Task.sleep(for: .seconds(1))
        let before = try server.residentBytes().total
        let connected = Counter()
        var configuration = WebSocketClientConfiguration()
        configuration.additionalHeaders = [.authorization: "Bearer \(session.sessionToken)"]
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let url = "ws://127.0.0.1:\(server.url.port!)/push/1"
        let sockets = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<connections {
                    group.addTask { [configuration, logger] in
                        _ = try? await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) {
                            inbound, _, _ in
                            connected.increment()
                            for try await _ in inbound {}
                        }
                    }
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while connected.value < connections, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .seconds(1))
        let after = try server.residentBytes().total
        let open = connected.value
        sockets.cancel()
        guard open == connections else {
            throw NimbusError(.networkUnavailable, "only \(open) of \(connections) sockets connected")
        }
        return (after - before) / connections
    }
}

/// A count shared between tasks.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
