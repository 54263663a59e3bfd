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

    private init() throws {
        let binaries = try Self.serverBinaries()
        self.binaries = binaries
        folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nimbus-postgres-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let user = getuid() == 0 ? (Self.userExists("postgres") ? "postgres" : "nobody") : nil
        self.user = user
        if let user { try Self.run("/bin/chown", ["-R", user, folder.path]) }
        let data = folder.appendingPathComponent("data").path
        try Self.run(
            "initdb", ["-D", data, "-U", "nimbus", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
            binaries: binaries, user: user)
        var lastFailure: (any Error)?
        // A port found free can be taken before the server binds it: try another.
        for _ in 0..<5 {
            let port = try Self.freePort()
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
        if let user { return try run("/usr/sbin/runuser", ["-u", user, "--", path] + arguments) }
        return try run(path, arguments)
    }

    /// The newest installed server's programs: Debian's `/usr/lib/postgresql/N/bin`, or `pg_config --bindir`.
    private static func serverBinaries() throws -> URL {
        let debian = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: debian.path)) ?? []).compactMap(Int.init).sorted()
        if let newest = versions.last {
            let folder = debian.appendingPathComponent("\(newest)/bin")
            if FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("initdb").path) { return folder }
        }
        if let bindir = try? run("/usr/bin/env", ["pg_config", "--bindir"]).trimmingCharacters(in: .whitespacesAndNewlines),
            FileManager.default.isExecutableFile(atPath: bindir + "/initdb")
        {
            return URL(fileURLWithPath: bindir)
        }
        throw Failure(description: "no PostgreSQL server is installed; run scripts/install-dependencies")
    }

    private static func userExists(_ name: String) -> Bool { getpwnam(name) != nil }

    private static func freePort() throws -> Int {
        let socket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "no socket for a free port") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs a program to its end and returns what it printed.
    ///
    /// Through `posix_spawn` and `waitpid` rather than Foundation's `Process`, which learns of a child's
    /// end from a descriptor the child holds: the server `pg_ctl` starts inherits it, and the wait would
    /// last as long as the server. Output goes to a file, not a pipe, for the same reason, and every other
    /// descriptor is closed in the child.
    @discardableResult
    private static func run(_ path: String, _ arguments: [String]) throws -> String {
        let outputPath = NSTemporaryDirectory() + "nimbus-postgres-output-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process may reach the child: a server `pg_ctl` starts would keep, for as
        // long as it runs, every socket the tests' servers had open (an HTTP/1.0 client waiting for its
        // connection to close waited in vain).
        try closeOthers(&actions)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "could not start \(path): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // Exited normally with status 0: WIFEXITED and WEXITSTATUS, which Swift does not import.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw Failure(description: "\(path) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }

    /// Closes every descriptor from 3 up in the child, by glibc's `posix_spawn_file_actions_addclosefrom_np`
    /// (2.34 and later; Swift's Glibc module does not import it, so it is looked up by name).
    private static func closeOthers(_ actions: inout posix_spawn_file_actions_t) throws {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        // RTLD_DEFAULT (a null handle): the symbol wherever the process has it.
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            throw Failure(description: "this C library cannot close a child's descriptors (glibc 2.34 or later can)")
        }
        let added = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        guard added == 0 else { throw Failure(description: "could not ask to close a child's descriptors: error \(added)") }
    }

    /// Stops every cluster still running when the test process exits (their folders go with the system's
    /// temporary files); registered once.
    private static let stopAtExit: Void = {
        atexit {
            for (pgCtl, data, user) in TemporaryPostgres.clustersToStop.withLock({ $0 }) {
                let arguments = ["-D", data, "-m", "immediate", "-w", "stop"]
                if let user {
                    _ = try? TemporaryPostgres.run("/usr/sbin/runuser", ["-u", user, "--", pgCtl] + arguments)
                } else {
                    _ = try? TemporaryPostgres.run(pgCtl, arguments)
                }
                try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: data).deletingLastPathComponent().path)
            }
        }
    }()

    private static let clustersToStop = Mutex<[(pgCtl: String, data: String, user: String?)]>([])
}
