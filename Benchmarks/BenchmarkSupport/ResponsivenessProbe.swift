import Foundation
import NimbusCore
import NimbusKit
import Synchronization

/// How responsive a server stays: sequential rounds of a `/health` request and a signed-in key-value
/// write (one key, acknowledged once committed and synced), each timed, and beside them the floor under
/// the write: a 4 KiB write and `fdatasync` of a file in the server's data directory, on the same disk.
///
/// The write is the request alone (`KeyValueClient`), not the SDK's `synchronize()`, which adds the
/// device's own work: a second round trip for changes, and three or four atomic writes of its local copy
/// (a sync and a rename each, ~0.6 ms on this disk), so that a round took 5–6 ms at the median on an
/// idle server, mostly in the client.
@MainActor
package final class ResponsivenessProbe {
    private let health: NimbusClient
    private let writer: KeyValueClient
    private var round: Int64 = 0
    private let syncProbe: Int32
    private let syncProbePath: String
    private let page = [UInt8](repeating: 0x5A, count: 4096)

    /// Latencies in milliseconds.
    package struct Latencies {
        package var health = [Double]()
        package var write = [Double]()
        package var sync = [Double]()

        package init() {}

        package static func += (left: inout Latencies, right: Latencies) {
            left.health += right.health
            left.write += right.write
            left.sync += right.sync
        }
    }

    package init(_ server: ServerProcess, user: String) async throws {
        let session = try await server.signIn(user, device: "probe")
        writer = KeyValueClient(
            client: NimbusClient(session: session, apiToken: server.apiToken), storeIdentifier: server.storeIdentifier)
        health = NimbusClient(server: server.url)
        syncProbePath = server.dataDirectory.appendingPathComponent("responsiveness-sync-probe").path
        syncProbe = open(syncProbePath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard syncProbe >= 0 else { throw NimbusError(.internalError, "cannot create \(syncProbePath)") }
    }

    isolated deinit {
        close(syncProbe)
        unlink(syncProbePath)
    }

    /// `rounds` rounds.
    package func measure(rounds: Int) async throws -> Latencies {
        var latencies = Latencies()
        for _ in 0..<rounds { try await measureRound(into: &latencies) }
        return latencies
    }

    /// Rounds for as long as `job` runs (at least one); the latencies, and how long the job took.
    package func measure(while job: @escaping @Sendable () async throws -> Void) async throws -> (Latencies, Duration) {
        let start = ContinuousClock.now
        let finished = Flag()
        let running = Task {
            defer { finished.value.store(true, ordering: .releasing) }
            try await job()
        }
        var latencies = Latencies()
        repeat {
            try await measureRound(into: &latencies)
        } while !finished.value.load(ordering: .acquiring)
        try await running.value
        return (latencies, ContinuousClock.now - start)
    }

    private func measureRound(into latencies: inout Latencies) async throws {
        var start = ContinuousClock.now
        _ = try await health.sendRaw(.GET, "/health", body: nil)
        latencies.health.append((ContinuousClock.now - start).milliseconds)
        round += 1
        start = ContinuousClock.now
        _ = try await writer.modify([.set("round", .int64(round))])
        latencies.write.append((ContinuousClock.now - start).milliseconds)
        start = ContinuousClock.now
        guard pwrite(syncProbe, page, page.count, 0) == page.count, fdatasync(syncProbe) == 0 else {
            throw NimbusError(.internalError, "cannot write and sync \(syncProbePath)")
        }
        latencies.sync.append((ContinuousClock.now - start).milliseconds)
    }
}

extension ResultTable {
    /// `/health` and key-value write p99 idle and during a job (target ≤ 10 ms during), with the disk's own
    /// synced-write p99 beside them, measured in the same rounds.
    package mutating func addResponsiveness(
        idle: ResponsivenessProbe.Latencies, during: ResponsivenessProbe.Latencies, job: String
    ) {
        let rows: [(String, [Double], [Double], target: String, bounded: Bool)] = [
            ("GET /health p99", idle.health, during.health, "≤ 10 ms during", true),
            ("Key-value write p99", idle.write, during.write, "≤ 10 ms during", true),
            ("Floor: 4 KiB write + fdatasync p99", idle.sync, during.sync, "(reference)", false),
        ]
        for (figure, quiet, busy, target, bounded) in rows {
            let (quiet, busy) = (Percentiles(quiet), Percentiles(busy))
            add(
                "\(figure), idle / during \(job)",
                String(format: "%.2f / %.2f ms (p50 %.2f / %.2f)", quiet.at(99), busy.at(99), quiet.at(50), busy.at(50)),
                target: target, met: !bounded || busy.at(99) <= 10)
        }
    }
}

private final class Flag: Sendable {
    let value = Atomic(false)
}
