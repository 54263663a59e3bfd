import Foundation

/// Programs the tests start (PostgreSQL's, haproxy, SeaweedFS), run so that none of the test process's descriptors
/// reach them, and the free loopback ports they listen on.
public enum ChildProgram {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// A loopback port free at the moment of asking, below the system's range of ephemeral ports: a port in
    /// that range may become the source port of any process's outgoing connection while the program that
    /// listens on it is down, and a test restarting SeaweedFS on its ports found one taken so. Another process
    /// may still take it before it is bound: callers try again.
    public static func freePort() throws -> Int {
        let ceiling = ephemeralPortsStart
        if ceiling > 11_000 {
            for _ in 0..<100 {
                let port = Int.random(in: 10_000..<ceiling)
                if (try? bind(port: port)) != nil { return port }
            }
        }
        return try bind(port: 0)
    }

    /// Where the system's ephemeral ports begin (Linux's `ip_local_port_range`, 32768 by default).
    private static let ephemeralPortsStart: Int = {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        return range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
    }()

    /// Binds a loopback socket to `port` (0: any the system picks) and closes it; the port bound.
    private static func bind(port: Int) throws -> Int {
        let socket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "no socket for a free port") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                Glibc.bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
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
    public static func run(_ path: String, _ arguments: [String]) throws -> String {
        let outputPath = NSTemporaryDirectory() + "nimbus-child-output-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        let pid = try spawn(path, arguments, output: outputPath, truncating: true, environment: environ)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // Exited normally with status 0: WIFEXITED and WEXITSTATUS, which Swift does not import.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw Failure(description: "\(path) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }

    /// Starts a program that runs until stopped (a server that stays in the foreground), its output in
    /// `log`, `environment` added to this process's; its process id. As with `run`, none of this process's
    /// descriptors reach it.
    public static func start(_ path: String, _ arguments: [String], environment: [String: String], log: String) throws -> pid_t {
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        return try envp.withUnsafeBufferPointer {
            try spawn(path, arguments, output: log, truncating: false, environment: $0.baseAddress!)
        }
    }

    /// Spawns a program with standard input from /dev/null, standard output and error into `output`, and
    /// every other descriptor closed (a server `pg_ctl` starts would otherwise keep, for as long as it runs,
    /// every socket the tests' servers had open: an HTTP/1.0 client waiting for its connection to close
    /// waited in vain).
    private static func spawn(
        _ path: String, _ arguments: [String], output: String, truncating: Bool,
        environment: UnsafePointer<UnsafeMutablePointer<CChar>?>
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | (truncating ? O_TRUNC : O_APPEND), 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        try closeOthers(&actions)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environment)
        guard spawned == 0 else { throw Failure(description: "could not start \(path): error \(spawned)") }
        return pid
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
}
