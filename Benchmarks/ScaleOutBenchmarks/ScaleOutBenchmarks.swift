import BenchmarkSupport
import Foundation
import NimbusCore
import NimbusKit
import NimbusTestingCore

/// PostgreSQL beside SQLite, and several nodes beside one, in one run against real `nimbus serve`
/// processes (release build) and a PostgreSQL cluster of its own on loopback (Debian's server binaries).
///
///     swift build -c release && .build/release/ScaleOutBenchmarks [floors] [keyvalue] [records] [nodes] [push] [documents]
///         [objects] [deployment] [backup]
///
/// `backup` (a PostgreSQL node's backup and restore, with 100,000 records and 500 MB of blobs) runs only when named.
@main
enum ScaleOutBenchmarks {
    /// Capacity, not policy: rate limits, quotas, the connections one address may hold and their idle
    /// timeout are lifted (the benchmark's clients all come from one address, each run's clients open
    /// connections of their own, and those of the first clients wait idle while the others sign in).
    static let limits = [
        "--session-rate", "1000000", "--token-rate", "1000000", "--user-quota-mb", "100000",
        "--max-connections-per-address", "100000", "--idle-timeout", "3600", "--request-head-timeout", "3600",
    ]

    static func main() async throws {
        let nimbus = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus")
        guard FileManager.default.isExecutableFile(atPath: nimbus.path) else {
            print("build the nimbus executable first: swift build -c release")
            exit(1)
        }
        let selected = Set(CommandLine.arguments.dropFirst())

        progress("starting PostgreSQL and the nodes")
        let cluster = try await TemporaryPostgres.dedicated()
        let database = try await cluster.database()
        let postgresCPU = ProcessCPU(pid: try cluster.serverProcessID(), withChildren: true)
        let sqlite = try await ServerProcess(nimbus: nimbus, port: port(), extraArguments: limits)
        var nodes = [try await ServerProcess(nimbus: nimbus, port: port(), extraArguments: limits, database: database)]
        for _ in 1..<3 {
            nodes.append(
                try await ServerProcess(
                    joining: nodes[0], database: database, nimbus: nimbus, port: port(), extraArguments: limits))
        }
        defer {
            sqlite.stop()
            for node in nodes.reversed() { node.stop() }
        }
        var table = ResultTable()
        do {
            try await measure(
                selected, sqlite: sqlite, nodes: nodes, cluster: cluster, database: database, postgresCPU: postgresCPU,
                nimbus: nimbus, into: &table)
        } catch {
            // What was measured before the failure is still worth reading (and a failure ends the process
            // before standard output's buffer would be written).
            print(table.render())
            fflush(nil)
            throw error
        }
        print(table.render())
    }

    @MainActor
    static func measure(
        _ selected: Set<String>, sqlite: ServerProcess, nodes: [ServerProcess], cluster: TemporaryPostgres, database: String,
        postgresCPU: ProcessCPU, nimbus: URL, into table: inout ResultTable
    ) async throws {
        func wanted(_ name: String) -> Bool { selected.isEmpty || selected.contains(name) }
        var roundTrip = 0.0
        if wanted("floors") || wanted("keyvalue") || wanted("records") {
            progress("measuring floors")
            roundTrip = try await sqlite.floorRows(into: &table)
            let commit = try await PostgresFloor.oneRowCommitMicroseconds(database, count: 2000)
            table.add(
                "Baseline: PostgreSQL commit of one row (PostgresNIO, synchronous_commit on)", String(format: "%.0f µs", commit),
                target: "(reference)", met: true)
            table.add(
                "Ceiling for sequential writes on PostgreSQL (1 / (GET + one-row commit))",
                String(format: "%.0f/s", 1_000_000 / (roundTrip + commit)), target: "(reference)", met: true)
        }
        if wanted("keyvalue") {
            progress("measuring key-value writes on each backend")
            try await keyValueRows(sqlite: sqlite, postgres: nodes[0], postgresCPU: postgresCPU, into: &table)
        }
        if wanted("records") {
            progress("measuring record saves on each backend")
            try await recordRows(sqlite: sqlite, postgres: nodes[0], into: &table)
        }
        if wanted("nodes") {
            progress("measuring 64 clients on one node and on three")
            try await nodeRows(nodes, postgresCPU: postgresCPU, into: &table)
        }
        if wanted("push") {
            progress("measuring push within a node and across nodes")
            let within = try await KeyValueLoad.propagationLatencies(from: nodes[0], to: nodes[0], changes: 1000)
            let across = try await KeyValueLoad.propagationLatencies(from: nodes[0], to: nodes[1], changes: 1000)
            table.add(
                "Push, same node (PostgreSQL) p50 / p99", String(format: "%.2f / %.2f ms", within.at(50), within.at(99)),
                target: "(reference)", met: true)
            table.add(
                "Push, across nodes p50 / p99", String(format: "%.2f / %.2f ms", across.at(50), across.at(99)),
                target: "p99 ≤ 50 ms", met: across.at(99) <= 50)
        }
        if wanted("documents") {
            progress("measuring document propagation on one node and across nodes")
            for (name, a, b) in [
                ("SQLite, one node", sqlite, sqlite), ("PostgreSQL, same node", nodes[0], nodes[0]),
                ("PostgreSQL, across nodes", nodes[0], nodes[1]),
            ] {
                let pair = try await DevicePair(a: a, b: b, name: "documents-\(UUIDString.random().prefix(8))")
                let latencies = Percentiles(try await pair.withDaemons { try await pair.propagation(files: 100) })
                table.add(
                    "Document propagation A → B, 100 × 1 KiB, \(name): p50 / p99",
                    String(format: "%.1f / %.1f ms", latencies.at(50), latencies.at(99)), target: "(reference)", met: true)
            }
        }
        if wanted("objects") {
            progress("measuring blobs in SeaweedFS beside the local folder")
            try await objectStoreRows(localFolder: sqlite, nimbus: nimbus, into: &table)
        }
        if wanted("deployment") {
            progress("starting the reference deployment")
            try await deploymentRows(nimbus: nimbus, into: &table)
        }
        if selected.contains("backup") {
            progress("measuring a PostgreSQL deployment's backup and restore")
            try await backupRows(cluster: cluster, nimbus: nimbus, into: &table)
        }
    }

    static func port() -> Int { Int.random(in: 20000...40000) }

    static func progress(_ message: String) {
        FileHandle.standardError.write(Data("… \(message)\n".utf8))
    }

    static func keyValueRows(
        sqlite: ServerProcess, postgres: ServerProcess, postgresCPU: ProcessCPU, into table: inout ResultTable
    ) async throws {
        var sequential = [String: Summary]()
        for (name, node, watched) in [
            ("SQLite", sqlite, [ProcessCPU(pid: sqlite.pid)]),
            ("PostgreSQL", postgres, [ProcessCPU(pid: postgres.pid), postgresCPU]),
        ] {
            // Per batch, in µs: the node's CPU, and the database server's (none for SQLite, inside the node).
            var perBatch = [[Double]]()
            sequential[name] = try await median(runs: 3) {
                let run = try await KeyValueLoad.writes(through: [node], clients: 1, batchesPerClient: 2000, watching: watched)
                perBatch.append(run.cpuSeconds.map { $0 / Double(run.batches) * 1_000_000 })
                return run.batchesPerSecond
            }
            let concurrent = try await median(runs: 3) {
                try await KeyValueLoad.writes(through: [node], clients: 16, batchesPerClient: 500).batchesPerSecond
            }
            table.add("Key-value sequential batches/s, \(name)", sequential[name]!.text, target: "(reference)", met: true)
            let nodeCPU = Percentiles(perBatch.map { $0[0] }).at(50)
            let databaseCPU = perBatch[0].count > 1 ? Percentiles(perBatch.map { $0[1] }).at(50) : 0
            table.add(
                "Key-value CPU per sequential batch, \(name): node + database server",
                String(format: "%.0f + %.0f µs", nodeCPU, databaseCPU), target: "(reference)", met: true)
            table.add("Key-value concurrent batches/s (16 clients), \(name)", concurrent.text, target: "(reference)", met: true)
        }
        table.add(
            "Key-value sequential, PostgreSQL / SQLite",
            String(format: "%.2f", sequential["PostgreSQL"]!.median / sequential["SQLite"]!.median),
            target: "(reference)", met: true)
    }

    static func recordRows(sqlite: ServerProcess, postgres: ServerProcess, into table: inout ResultTable) async throws {
        var single = [String: Summary]()
        for (name, node) in [("SQLite", sqlite), ("PostgreSQL", postgres)] {
            progress("\(name) at \(node.url)")
            let session = try await node.signIn("records@bench.local", device: "bench")
            let database = CloudContainer(identifier: node.container, session: session, apiToken: node.apiToken)
                .privateCloudDatabase
            single[name] = try await median(runs: 3) { try await RecordLoad.sequentialSaves(database, count: 1000) }
            let batched = try await median(runs: 3) { try await RecordLoad.batchedSaves(database, batches: 50) }
            table.add("Record saves/s, one per request, \(name)", single[name]!.text, target: "(reference)", met: true)
            table.add("Record saves/s, batches of 200, \(name)", batched.text, target: "(reference)", met: true)
        }
        table.add(
            "Record single saves, PostgreSQL / SQLite",
            String(format: "%.2f", single["PostgreSQL"]!.median / single["SQLite"]!.median),
            target: "(reference)", met: true)
    }

    /// 64 clients writing key-values through one node, then dealt across three; on two cores this shows
    /// what the extra nodes cost, not a speed-up.
    static func nodeRows(_ nodes: [ServerProcess], postgresCPU: ProcessCPU, into table: inout ResultTable) async throws {
        for count in [1, 3] {
            let through = Array(nodes.prefix(count))
            let watched = through.map { ProcessCPU(pid: $0.pid) } + [postgresCPU]
            let run = try await KeyValueLoad.writes(through: through, clients: 64, batchesPerClient: 200, watching: watched)
            let cpu = run.cpuSeconds.map { String(format: "%.1f", $0) }
            table.add(
                "64 clients through \(count) node\(count == 1 ? "" : "s"): batches/s, p99",
                String(format: "%.0f, %.1f ms", run.batchesPerSecond, run.latencies.at(99)), target: "(reference)", met: true)
            table.add(
                "  CPU seconds: node\(count == 1 ? "" : "s") \(cpu.dropLast().joined(separator: " + ")), PostgreSQL \(cpu.last!)",
                String(format: "%.0f µs per batch", run.cpuSeconds.reduce(0, +) / Double(run.batches) * 1_000_000),
                target: "(reference)", met: true)
        }
    }
}
