import Foundation
import Synchronization

/// A real load balancer in front of a test's server nodes: Debian's haproxy on a free loopback port, which
/// sends each HTTP request to the next node in turn (requests on one client connection included), so one
/// device's requests and its push socket land on different nodes. Stopped when the test's resources are
/// cleaned up, or at the latest when the process exits.
public final class TemporaryBalancer: Sendable {
    public let port: Int
    private let folder: URL
    private let processID: Int32

    public var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Starts haproxy in front of the nodes listening on `backends` (loopback ports).
    public static func start(backends: [Int]) async throws -> TemporaryBalancer {
        let balancer = try await onOwnThread { try TemporaryBalancer(backends: backends) }
        TestResources.current?.onCleanup { balancer.stop() }
        return balancer
    }

    private init(backends: [Int]) throws {
        guard let program = ["/usr/sbin/haproxy", "/usr/local/sbin/haproxy"].first(where: FileManager.default.isExecutableFile)
        else { throw ChildProgram.Failure(description: "haproxy is not installed; run scripts/install-dependencies") }
        folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nimbus-balancer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let configuration = folder.appendingPathComponent("haproxy.cfg")
        let pidFile = folder.appendingPathComponent("haproxy.pid")
        var lastFailure: (any Error)?
        // A port found free can be taken before haproxy binds it: try another.
        for _ in 0..<5 {
            let port = try ChildProgram.freePort()
            do {
                try Self.configuration(port: port, backends: backends).write(to: configuration, atomically: true, encoding: .utf8)
                // `-D`: haproxy binds its port, forks and its first process exits, so the balancer listens
                // once this returns.
                try ChildProgram.run(program, ["-f", configuration.path, "-D", "-p", pidFile.path])
                let pid = try String(contentsOf: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                guard let processID = Int32(pid) else { throw ChildProgram.Failure(description: "haproxy wrote no process id") }
                self.port = port
                self.processID = processID
                Self.running.withLock { $0.insert(processID) }
                _ = Self.stopAtExit
                return
            } catch {
                lastFailure = error
            }
        }
        try? FileManager.default.removeItem(at: folder)
        throw lastFailure ?? ChildProgram.Failure(description: "haproxy did not start")
    }

    /// Round robin per request, no health checks (a node that refuses a connection is skipped by the
    /// redispatch, as when one restarts), and timeouts longer than any request or push socket of a test.
    private static func configuration(port: Int, backends: [Int]) -> String {
        let servers = backends.enumerated().map { "    server node\($0.offset) 127.0.0.1:\($0.element)" }
        return """
            global
                maxconn 4096

            defaults
                mode http
                retries 3
                option redispatch 1
                timeout connect 5s
                timeout client 10m
                timeout server 10m
                timeout tunnel 1h

            frontend nimbus
                bind 127.0.0.1:\(port)
                stats enable
                stats uri \(statisticsPath)
                default_backend nodes

            backend nodes
                balance roundrobin
            \(servers.joined(separator: "\n"))

            """
    }

    /// haproxy's own statistics as CSV, answered by the balancer itself (no node sees these requests).
    public var statisticsURL: URL { URL(string: "http://127.0.0.1:\(port)\(Self.statisticsPath);csv")! }

    private static let statisticsPath = "/balancer-statistics"

    /// How many requests the balancer has sent to each node (by position in `backends`), from the CSV
    /// `statisticsURL` answers: its `stot` column, the requests a server was given.
    public static func requestsPerNode(statistics csv: String) throws -> [Int] {
        let lines = csv.split(separator: "\n")
        guard let header = lines.first, header.hasPrefix("# ") else {
            throw ChildProgram.Failure(description: "haproxy's statistics have no header: \(csv.prefix(200))")
        }
        let columns = header.dropFirst(2).split(separator: ",", omittingEmptySubsequences: false)
        guard let proxy = columns.firstIndex(of: "pxname"), let server = columns.firstIndex(of: "svname"),
            let total = columns.firstIndex(of: "stot")
        else { throw ChildProgram.Failure(description: "haproxy's statistics lack pxname, svname or stot") }
        var counts = [Int: Int]()
        for line in lines.dropFirst() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count > total, fields[proxy] == "nodes", fields[server].hasPrefix("node"),
                let node = Int(fields[server].dropFirst(4)), let requests = Int(fields[total])
            else { continue }
            counts[node] = requests
        }
        return counts.keys.sorted().map { counts[$0]! }
    }

    public func stop() {
        guard Self.running.withLock({ $0.remove(processID) }) != nil else { return }
        kill(processID, SIGTERM)
        try? FileManager.default.removeItem(at: folder)
    }

    private static let running = Mutex<Set<Int32>>([])

    private static let stopAtExit: Void = {
        atexit {
            for processID in TemporaryBalancer.running.withLock({ $0 }) { kill(processID, SIGTERM) }
        }
    }()
}
