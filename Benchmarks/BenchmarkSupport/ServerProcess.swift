import Foundation
import GRDB
#if canImport(Glibc)
    import Glibc
#endif
import NimbusCore
import NimbusKit

/// A `nimbus serve` child process on a free loopback port with a temporary data directory, set up with
/// an administrator, an app entitled to a container, and an API token.
// @unchecked: every stored property is a constant; the one non-Sendable value, `process`, is only
// touched by `init` and `stop()`, which the benchmark calls once each from its main task.
package final class ServerProcess: @unchecked Sendable {
    let process = Process()
    package let url: URL
    package let apiToken: String
    package let storeIdentifier = "98Z3R5XU29.com.example.Bench"
    package let container = "iCloud.com.example.Bench"
    package let dataDirectory: URL
    package static let password = "benchmark password"

    package var pid: Int32 { process.processIdentifier }

    /// Whether this process made the data directory (and so removes it when it stops): the first node of a
    /// deployment does, the nodes that join it do not.
    private let ownsData: Bool

    /// The first (or only) node of a deployment: on its own data directory, and on the PostgreSQL database
    /// `database` names when given (else on SQLite in its data directory).
    package init(nimbus: URL, port: Int, extraArguments: [String], database: String? = nil) async throws {
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-\(UUIDString.random())")
        ownsData = true
        let storage = database.map { ["--database", $0] } ?? []
        let admin = Process()
        admin.executableURL = nimbus
        admin.arguments =
            ["admin", "init", "--data", dataDirectory.path, "--email", "admin@bench.local", "--password", Self.password] + storage
        admin.standardOutput = FileHandle.nullDevice
        try admin.run()
        admin.waitUntilExit()

        url = try await Self.serve(process, nimbus: nimbus, data: dataDirectory, port: port, arguments: extraArguments + storage)
        apiToken = try await Self.setUpApp(url)
    }

    /// Another node of `first`'s deployment, on PostgreSQL database `database` (the one `first` uses): the
    /// same blob folder, the same app and token.
    package init(joining first: ServerProcess, database: String, nimbus: URL, port: Int, extraArguments: [String]) async throws {
        dataDirectory = first.dataDirectory
        ownsData = false
        url = try await Self.serve(
            process, nimbus: nimbus, data: dataDirectory, port: port, arguments: extraArguments + ["--database", database])
        apiToken = first.apiToken
    }

    /// Runs a `nimbus` command (`login`, say), or another program, to its end; throws unless it exits 0.
    package static func runCommand(_ nimbus: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = nimbus
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkError("\(nimbus.lastPathComponent) \(arguments.first ?? "") failed")
        }
    }

    /// Starts `nimbus serve` and waits until it answers `/health`; its address.
    private static func serve(_ process: Process, nimbus: URL, data: URL, port: Int, arguments: [String]) async throws -> URL {
        process.executableURL = nimbus
        process.arguments = ["serve", "--data", data.path, "--port", String(port), "--log-level", "warning"] + arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let url = URL(string: "http://127.0.0.1:\(port)")!
        let deadline = Date().addingTimeInterval(30)
        while (try? await NimbusClient(server: url).sendRaw(.GET, "/health", body: nil)) == nil {
            guard Date() < deadline else { throw NimbusError(.networkUnavailable, "the server did not start") }
            try await Task.sleep(for: .milliseconds(50))
        }
        return url
    }

    /// A team, an app entitled to the container, and an API token for it; the token.
    private static func setUpApp(_ url: URL) async throws -> String {
        let session = try await NimbusAccount.signIn(
            server: url, email: "admin@bench.local", password: Self.password, deviceName: "bench")
        let client = NimbusClient(server: url, sessionToken: session.sessionToken)
        let _: Team = try await client.send(.POST, "/admin/1/teams", body: CreateTeamRequest(teamID: "98Z3R5XU29", name: "Bench"))
        let _: App = try await client.send(
            .POST, "/admin/1/apps", body: CreateAppRequest(bundleID: "com.example.Bench", teamID: "98Z3R5XU29"))
        let _: Container = try await client.send(
            .POST, "/admin/1/containers", body: Container(identifier: "iCloud.com.example.Bench", teamID: "98Z3R5XU29"))
        let _: App = try await client.send(
            .POST, "/admin/1/apps/com.example.Bench/entitlements", body: EntitlementRequest(container: "iCloud.com.example.Bench")
        )
        let token: CreatedAPIToken = try await client.send(
            .POST, "/admin/1/tokens",
            body: CreateAPITokenRequest(container: "iCloud.com.example.Bench", bundleID: "com.example.Bench"))
        return token.apiToken
    }

    /// Declares QUERYABLE and SORTABLE indexes on system fields of a record type in the development schema
    /// as `nimbus schema import` would, which indexes the records already stored; how long the import took.
    package func indexSystemFields(_ fields: [String], of type: String) async throws -> Duration {
        let session = try await NimbusAccount.signIn(
            server: url, email: "admin@bench.local", password: Self.password, deviceName: "bench")
        let client = NimbusClient(server: url, sessionToken: session.sessionToken)
        let path = "/admin/1/containers/\(container)/schema/development"
        let current: SchemaDocument = try await client.send(.GET, path)
        var schema = try Schema(parsing: current.text)
        try schema.indexSystemFields(fields, of: type)
        let start = ContinuousClock.now
        let _: SchemaDocument = try await client.send(.PUT, path, body: SchemaDocument(text: schema.text))
        return ContinuousClock.now - start
    }

    /// Waits until no deleted zone awaits the purge of its records, watching the server's database
    /// (a deletion answers before the purge, which runs beside requests).
    package func zonePurgesFinished() async throws {
        let database = try DatabaseQueue(path: dataDirectory.appendingPathComponent("nimbus.sqlite").path)
        while try await database.read({ db in try Int.fetchOne(db, sql: "SELECT count(*) FROM zone_purges") ?? 0 }) > 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A user's device session (the account is created on first use).
    package func signIn(_ email: String, device: String) async throws -> NimbusSession {
        _ = try? await NimbusAccount.signUp(server: url, email: email, password: Self.password)
        return try await NimbusAccount.signIn(server: url, email: email, password: Self.password, deviceName: device)
    }

    /// Resident memory of the server process, from /proc: the total, and the anonymous part (heap and
    /// stacks, as opposed to pages of the executable and libraries mapped from files).
    package func residentBytes() throws -> (total: Int, anonymous: Int) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func kilobytes(_ field: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
                let value = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
            else { return 0 }
            return value * 1024
        }
        return (kilobytes("VmRSS:"), kilobytes("RssAnon:"))
    }

    /// CPU time the server process has used so far (user and system), from /proc.
    package func cpuSeconds() throws -> Double { try ProcessCPU(pid: pid).seconds() }

    /// How many operations `body` completes per second, and the server's CPU per operation in µs.
    @MainActor
    package func perOperation(_ operations: Int, _ body: () async throws -> Void) async throws -> (rate: Double, cpu: Double) {
        let cpu = try cpuSeconds()
        let start = ContinuousClock.now
        try await body()
        let elapsed = (ContinuousClock.now - start).milliseconds / 1000
        return (Double(operations) / elapsed, (try cpuSeconds() - cpu) * 1_000_000 / Double(operations))
    }

    /// Sequential `/health` round trips: per second, and the server's CPU per request in µs.
    @MainActor
    package func healthCost(requests: Int) async throws -> (rate: Double, cpu: Double) {
        let client = NimbusClient(server: url)
        return try await perOperation(requests) {
            for _ in 0..<requests { _ = try await client.sendRaw(.GET, "/health", body: nil) }
        }
    }

    /// Sequential round trips of the cheapest route per second: the HTTP floor under every other figure.
    package func healthThroughput(requests: Int) async throws -> Double {
        let client = NimbusClient(server: url)
        let start = ContinuousClock.now
        for _ in 0..<requests { _ = try await client.sendRaw(.GET, "/health", body: nil) }
        return Double(requests) / ((ContinuousClock.now - start).milliseconds / 1000)
    }

    /// Mean time, in microseconds, to overwrite 4 KiB of a file in the server's data directory and
    /// `fdatasync` it: the disk's floor under every acknowledged commit, which waits for such a sync.
    package func syncedWriteMicroseconds(count: Int) throws -> Double {
        try withProbeFile("sync-probe") { descriptor, path in
            let page = [UInt8](repeating: 0x5A, count: 4096)
            let start = ContinuousClock.now
            for _ in 0..<count {
                guard pwrite(descriptor, page, page.count, 0) == page.count, fdatasync(descriptor) == 0 else {
                    throw NimbusError(.internalError, "cannot write and sync \(path)")
                }
            }
            return (ContinuousClock.now - start).milliseconds * 1000 / Double(count)
        }
    }

    /// MiB/s of writing `bytes` to a new file in the data directory in 8 MiB pieces and syncing it: the floor of a
    /// large file made durable.
    package func syncedLargeWriteMebibytesPerSecond(bytes: Int) throws -> Double {
        try withProbeFile("large-sync-probe") { descriptor, path in
            let piece = [UInt8](repeating: 0x5A, count: 8 << 20)
            let start = ContinuousClock.now
            var written = 0
            while written < bytes {
                let count = min(piece.count, bytes - written)
                guard write(descriptor, piece, count) == count else { throw NimbusError(.internalError, "cannot write \(path)") }
                written += count
            }
            guard fdatasync(descriptor) == 0 else { throw NimbusError(.internalError, "cannot sync \(path)") }
            return Double(bytes) / Double(1 << 20) / ((ContinuousClock.now - start).milliseconds / 1000)
        }
    }

    /// A new file in the data directory, open for writing while `body` runs, then gone.
    private func withProbeFile<T>(_ name: String, _ body: (Int32, String) throws -> T) throws -> T {
        let path = dataDirectory.appendingPathComponent(name).path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw NimbusError(.internalError, "cannot create \(path)") }
        defer {
            close(descriptor)
            unlink(path)
        }
        return try body(descriptor, path)
    }

    /// Rows that show what the machine allows: sequential writes can be no faster than one HTTP round
    /// trip plus one synced disk write each, and a key-value write's commit syncs several pages. Returns
    /// the `/health` round trip in microseconds, for the floors a suite adds of its own.
    @MainActor
    @discardableResult
    package func floorRows(into table: inout ResultTable) async throws -> Double {
        let health = try await median(runs: 3) { try await healthThroughput(requests: 3000) }
        let sync = try syncedWriteMicroseconds(count: 1000)
        let commit = try CommitFloor.keyValueCommitMicroseconds(in: dataDirectory, count: 1000)
        let roundTrip = 1_000_000 / health.median
        table.add("Baseline: sequential GET /health/s", health.text, target: "(reference)", met: true)
        table.add(
            "Baseline: 4 KiB write + fdatasync in the data directory", String(format: "%.0f µs", sync), target: "(reference)",
            met: true)
        table.add(
            "Ceiling for sequential acknowledged writes (1 / (GET + sync))",
            String(format: "%.0f/s", 1_000_000 / (roundTrip + sync)),
            target: "(reference)", met: true)
        table.add(
            "Baseline: a key-value write's synced commit alone (SQLite)", String(format: "%.0f µs", commit),
            target: "(reference)",
            met: true)
        table.add(
            "Ceiling for sequential key-value writes (1 / (GET + commit))",
            String(format: "%.0f/s", 1_000_000 / (roundTrip + commit)),
            target: "(reference)", met: true)
        return roundTrip
    }

    package func stop() {
        process.interrupt()
        process.waitUntilExit()
        if ownsData { try? FileManager.default.removeItem(at: dataDirectory) }
    }
}
