import Foundation
import NimbusCore
import NimbusKit

/// Key-value work the benchmarks time against one or more `nimbus serve` nodes.
package enum KeyValueLoad {
    /// What a run of acknowledged writes measured.
    package struct Writes {
        package var batchesPerSecond: Double
        /// Each batch's round trip, in milliseconds.
        package var latencies: Percentiles
        /// CPU seconds each watched process used during the run, in the order they were given.
        package var cpuSeconds: [Double]
        package var batches: Int
    }

    /// Acknowledged single-key batches from `clients` users writing concurrently, each through the node
    /// `clients` are dealt to in turn; the CPU of `watched` processes (the nodes, the database) is measured
    /// over the run.
    package static func writes(
        through nodes: [ServerProcess], clients: Int, batchesPerClient: Int, watching watched: [ProcessCPU] = []
    ) async throws -> Writes {
        var writers = [KeyValueClient]()
        for index in 0..<clients {
            let node = nodes[index % nodes.count]
            let session = try await node.signIn("writer\(index)-\(clients)@bench.local", device: "writer")
            writers.append(
                KeyValueClient(
                    client: NimbusClient(session: session, apiToken: node.apiToken), storeIdentifier: node.storeIdentifier))
        }
        let start = ContinuousClock.now
        let cpuStart = try watched.map { try $0.seconds() }
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for writer in writers {
                group.addTask {
                    var latencies = [Double]()
                    latencies.reserveCapacity(batchesPerClient)
                    for batch in 0..<batchesPerClient {
                        let sent = ContinuousClock.now
                        _ = try await writer.modify([.set("key\(batch % 1000)", .int64(Int64(batch)))])
                        latencies.append((ContinuousClock.now - sent).milliseconds)
                    }
                    return latencies
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let seconds = (ContinuousClock.now - start).milliseconds / 1000
        let cpu = try zip(watched, cpuStart).map { try $0.seconds() - $1 }
        let batches = clients * batchesPerClient
        return Writes(
            batchesPerSecond: Double(batches) / seconds, latencies: Percentiles(latencies), cpuSeconds: cpu, batches: batches)
    }

    /// A key set on a device signed in to `writer` until the change event for it on a device signed in
    /// to `reader` (the same node or another), one change at a time, in milliseconds.
    package static func propagationLatencies(from writer: ServerProcess, to reader: ServerProcess, changes: Int) async throws
        -> Percentiles
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nimbus-bench-devices-\(UUIDString.random())")
        defer { try? FileManager.default.removeItem(at: directory) }
        func device(_ name: String, on node: ServerProcess) async throws -> UbiquitousKeyValueStore {
            let session = try await node.signIn("propagation@bench.local", device: name)
            var configuration = UbiquitousKeyValueStore.Configuration(
                session: session, apiToken: node.apiToken, storeIdentifier: node.storeIdentifier,
                localDirectory: directory.appendingPathComponent(name))
            configuration.logger.logLevel = .error
            return try UbiquitousKeyValueStore(configuration: configuration)
        }
        let phone = try await device("phone", on: writer)
        let laptop = try await device("laptop", on: reader)
        defer {
            phone.close()
            laptop.close()
        }
        guard await phone.synchronize(), await laptop.synchronize() else {
            throw NimbusError(.networkUnavailable, "devices did not sync")
        }
        while !laptop.isPushConnected { try await Task.sleep(for: .milliseconds(10)) }

        var events = laptop.changes().makeAsyncIterator()
        var latencies = [Double]()
        let warmUp = 50
        for index in 0..<(changes + warmUp) {
            let value = Int64(index)
            let start = ContinuousClock.now
            phone.set(value, forKey: "counter")
            while let event = await events.next() {
                if event.changedKeys.contains("counter"), laptop.longLong(forKey: "counter") == value { break }
            }
            if index >= warmUp { latencies.append((ContinuousClock.now - start).milliseconds) }
        }
        return Percentiles(latencies)
    }
}

/// The CPU time a process (and, when asked, its children) used, from /proc.
package struct ProcessCPU: Sendable {
    package let pid: Int32
    /// Whether the process's children count too (a PostgreSQL server's backends are its children).
    package let withChildren: Bool

    package init(pid: Int32, withChildren: Bool = false) {
        self.pid = pid
        self.withChildren = withChildren
    }

    /// User and system CPU seconds so far. Children that have exited no longer count: the figure is for
    /// processes that live through a run (a server's connections do).
    package func seconds() throws -> Double {
        var pids = [pid]
        if withChildren { pids += Self.children(of: pid) }
        return try pids.reduce(0) { $0 + (try Self.seconds(of: $1)) }
    }

    static func seconds(of pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the parenthesised command name; utime and stime are the 12th and 13th of them.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The processes whose parent is `pid` (their fourth /proc stat field, the second after the name).
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { candidate in
            guard let stat = try? String(contentsOfFile: "/proc/\(candidate)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid
        }
    }
}
