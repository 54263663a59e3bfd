import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for the tests of one process: made by the installed server's `initdb`
/// in a temporary folder, started by `pg_ctl` on a free loopback port, and stopped when the process exits.
/// Each test takes a database of its own (`database()`).
///
/// PostgreSQL refuses to run as root; run as root, the cluster belongs to the `postgres` user (Debian's
/// package makes it) or else `nobody`.
public final class TemporaryPostgres: Sendable {
    public let port: Int
    public let folder: URL
    private let binaries: URL
    private let user: String?

    /// The process's cluster, started on first use.
    public static func shared() async throws -> TemporaryPostgres {
        try await onOwnThread { try started.get() }
    }

    private static let started = Result { try TemporaryPostgres() }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private convenience init() throws {
        try self.init { data, binaries, user in
            try Self.run(
                "initdb", ["-D", data, "-U", "nimbus", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                binaries: binaries, user: user)
        }
    }

    /// A cluster whose data folder `make` fills, started on a free port.
    private init(making make: (_ data: String, _ binaries: URL, _ user: String?) throws -> Void) throws {
        let binaries = try Self.serverBinaries()
        self.binaries = binaries
        folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nimbus-postgres-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let user = getuid() == 0 ? (Self.userExists("postgres") ? "postgres" : "nobody") : nil
        self.user = user
        if let user { try ChildProgram.run("/bin/chown", ["-R", user, folder.path]) }
        let data = folder.appendingPathComponent("data").path
        try make(data, binaries, user)
        var lastFailure: (any Error)?
        // A port found free can be taken before the server binds it: try another.
        for _ in 0..<5 {
            let port = try ChildProgram.freePort()
            do {
                try Self.start(
                    data: data, port: port, log: folder.appendingPathComponent("server.log").path, binaries: binaries, user: user)
                self.port = port
                Self.clustersToStop.withLock { $0.append((binaries.appendingPathComponent("pg_ctl").path, data, user)) }
                _ = Self.stopAtExit
                return
            } catch {
                lastFailure = error
            }
        }
        throw lastFailure ?? Failure(description: "PostgreSQL did not start")
    }

    /// A cluster for the calling test alone, which it may stop and start (the shared one serves every test
    /// at once); removed when the test's resources are cleaned up.
    public static func dedicated() async throws -> TemporaryPostgres {
        let cluster = try await onOwnThread { try TemporaryPostgres() }
        TestResources.current?.onCleanup {
            _ = try? await onOwnThread {
                try? cluster.run("pg_ctl", ["-D", cluster.data, "-m", "immediate", "-w", "stop"])
                try? FileManager.default.removeItem(at: cluster.folder)
            }
        }
        return cluster
    }

    /// A streaming standby of this cluster (its `pg_basebackup`, following it through replication), removed
    /// with the test's resources. `synchronous`: this cluster's commits wait until the standby has flushed
    /// them, so a commit acknowledged here survives the loss of this cluster's machine.
    public func standby(synchronous: Bool) async throws -> TemporaryPostgres {
        let name = Self.standbyName
        let standby = try await onOwnThread {
            try TemporaryPostgres { data, binaries, user in
                try Self.run(
                    "pg_basebackup",
                    [
                        "-d", "host=127.0.0.1 port=\(self.port) user=nimbus application_name=\(name)", "-D", data, "-R",
                        "-X", "stream", "--no-sync", "-c", "fast",
                    ], binaries: binaries, user: user)
            }
        }
        TestResources.current?.onCleanup {
            _ = try? await onOwnThread {
                try? standby.run("pg_ctl", ["-D", standby.data, "-m", "immediate", "-w", "stop"])
                try? FileManager.default.removeItem(at: standby.folder)
            }
        }
        if synchronous { try await synchronousReplication(true) }
        return standby
    }

    private static let standbyName = "nimbus_standby"

    /// Makes this primary's commits wait for its standby (`standby(synchronous:)`) to flush them, once the
    /// standby says it replicates synchronously; or (`false`) no longer wait.
    public func synchronousReplication(_ on: Bool) async throws {
        @Sendable func psql(_ arguments: [String]) async throws -> String {
            try await onOwnThread {
                try self.run(
                    "psql",
                    ["-h", "127.0.0.1", "-p", "\(self.port)", "-U", "nimbus", "-d", "postgres", "-v", "ON_ERROR_STOP=1"]
                        + arguments)
            }
        }
        _ = try await psql([
            "-c", "ALTER SYSTEM SET synchronous_standby_names = '\(on ? Self.standbyName : "")'", "-c", "SELECT pg_reload_conf()",
        ])
        // Synchronous once the primary says so: until then a commit does not wait for the standby.
        let expected = on ? "sync" : "async"
        let reached = try await eventually(timeout: .seconds(30)) {
            let state = try await psql([
                "-Atc", "SELECT sync_state FROM pg_stat_replication WHERE application_name = '\(Self.standbyName)'",
            ])
            return state.trimmingCharacters(in: .whitespacesAndNewlines) == expected
        }
        guard reached else { throw Failure(description: "the standby's replication did not become \(expected) in 30 s") }
    }

    /// Makes a standby the primary (`pg_ctl promote`), once it takes writes.
    public func promote() async throws {
        try await onOwnThread { try self.run("pg_ctl", ["-D", self.data, "-w", "-t", "60", "promote"]) }
    }

    private var data: String { folder.appendingPathComponent("data").path }

    /// Stops the server: at once, as a crash or a lost machine does (`immediate`), or after rolling back what
    /// runs and closing every connection (`fast`).
    public func stop(immediately: Bool = true) async throws {
        try await onOwnThread {
            try self.run("pg_ctl", ["-D", self.data, "-m", immediately ? "immediate" : "fast", "-w", "stop"])
        }
    }

    /// Starts the stopped server again, on its port.
    public func start() async throws {
        try await onOwnThread {
            try Self.start(
                data: self.data, port: self.port, log: self.folder.appendingPathComponent("server.log").path,
                binaries: self.binaries, user: self.user)
        }
    }

    private static func start(data: String, port: Int, log: String, binaries: URL, user: String?) throws {
        try run(
            "pg_ctl",
            [
                "-D", data, "-l", log, "-w", "-t", "60", "-o",
                "-p \(port) -k \(URL(fileURLWithPath: data).deletingLastPathComponent().path) -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=64MB",
                "start",
            ], binaries: binaries, user: user)
    }

    /// A new, empty database on the cluster, dropped when the current test's resources are cleaned up;
    /// its URL.
    public func database() async throws -> String {
        let name = "nimbus_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        try await onOwnThread { try self.run("createdb", ["-h", "127.0.0.1", "-p", "\(self.port)", "-U", "nimbus", name]) }
        TestResources.current?.onCleanup {
            _ = try? await onOwnThread {
                try self.run("dropdb", ["--force", "-h", "127.0.0.1", "-p", "\(self.port)", "-U", "nimbus", name])
            }
        }
        return url(database: name)
    }

    /// The server's main process (its connections' processes are its children), from `postmaster.pid`.
    public func serverProcessID() throws -> Int32 {
        let file = try String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8)
        guard let pid = file.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw Failure(description: "\(data)/postmaster.pid names no process")
        }
        return pid
    }

    public func url(database: String) -> String { "postgres://nimbus@127.0.0.1:\(port)/\(database)?sslmode=disable" }

    /// Runs one of the server's programs, as the cluster's user.
    @discardableResult
    public func run(_ program: String, _ arguments: [String]) throws -> String {
        try Self.run(program, arguments, binaries: binaries, user: user)
    }

    @discardableResult
    private static func run(_ program: String, _ arguments: [String], binaries: URL, user: String?) throws -> String {
        let path = binaries.appendingPathComponent(program).path
        if let user { return try ChildProgram.run("/usr/sbin/runuser", ["-u", user, "--", path] + arguments) }
        return try ChildProgram.run(path, arguments)
    }

    /// The newest installed server's programs: Debian's `/usr/lib/postgresql/N/bin`, or `pg_config --bindir`.
    private static func serverBinaries() throws -> URL {
        let debian = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: debian.path)) ?? []).compactMap(Int.init).sorted()
        if let newest = versions.last {
            let folder = debian.appendingPathComponent("\(newest)/bin")
            if FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("initdb").path) { return folder }
        }
        if let bindir = try? ChildProgram.run("/usr/bin/env", ["pg_config", "--bindir"]).trimmingCharacters(
            in: .whitespacesAndNewlines),
            FileManager.default.isExecutableFile(atPath: bindir + "/initdb")
        {
            return URL(fileURLWithPath: bindir)
        }
        throw Failure(description: "no PostgreSQL server is installed; run scripts/install-dependencies")
    }

    private static func userExists(_ name: String) -> Bool { getpwnam(name) != nil }

    /// Stops every cluster still running when the test process exits (their folders go with the system's
    /// temporary files); registered once.
    private static let stopAtExit: Void = {
        atexit {
            for (pgCtl, data, user) in TemporaryPostgres.clustersToStop.withLock({ $0 }) {
                let arguments = ["-D", data, "-m", "immediate", "-w", "stop"]
                if let user {
                    _ = try? ChildProgram.run("/usr/sbin/runuser", ["-u", user, "--", pgCtl] + arguments)
                } else {
                    _ = try? ChildProgram.run(pgCtl, arguments)
                }
                try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: data).deletingLastPathComponent().path)
            }
        }
    }()

    private static let clustersToStop = Mutex<[(pgCtl: String, data: String, user: String?)]>([])
}
