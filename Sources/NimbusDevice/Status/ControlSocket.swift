import Foundation
import NimbusCore

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's Unix domain socket (`ROOT/.nimbus/control.sock`, in an owner-only folder), through which
/// the CLI and apps ask what the daemon is doing. A request and its answer are one JSON object on one line
/// each; each connection is answered on a thread of its own and may take at most `timeout` to send its
/// request.
package final class ControlSocket: Sendable {
    private let path: String
    private let listener: Int32
    /// Held (`flock`) while this daemon serves the root.
    private let lock: Int32
    static let timeout = timeval(tv_sec: 2, tv_usec: 0)
    static let maxRequestBytes = 64 << 10

    /// Where a device root's daemon listens.
    package static func path(root: URL) -> URL {
        root.appendingPathComponent(".nimbus").appendingPathComponent("control.sock")
    }

    /// Listens at `path` and answers each request with `handler`. Refuses when another daemon answers there
    /// already (one daemon a root: two would sync the same folder against each other).
    package init(path url: URL, handler: @escaping @Sendable (ControlRequest) async -> ControlResponse) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard chmod(directory.path, 0o700) == 0 else { throw Self.failure("cannot make \(directory.path) owner-only") }
        path = url.path
        // The lock makes "one daemon a root" hold for two started at once; the kernel drops it with the process.
        let lock = open(directory.appendingPathComponent("daemon.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw Self.failure("cannot open the lock in \(directory.path)") }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0, (try? Self.connect(path)).map({ close($0) }) == nil else {
            close(lock)
            throw NimbusError(.conflict, "another nimbus device daemon serves \(directory.deletingLastPathComponent().path)")
        }
        self.lock = lock
        unlink(path)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw Self.failure("cannot open a Unix socket") }
        self.listener = listener
        do {
            // Bound under a temporary name, made owner-only, then renamed: no one ever sees it otherwise.
            let temporary = path + ".\(getpid())"
            unlink(temporary)
            var address = try Self.address(temporary)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard bound == 0, chmod(temporary, 0o600) == 0, listen(listener, 16) == 0, rename(temporary, path) == 0 else {
                unlink(temporary)
                throw Self.failure("cannot listen at \(path)")
            }
        } catch {
            close(listener)
            close(lock)
            throw error
        }
        let thread = Thread { Self.serve(listener, handler: handler) }
        thread.name = "nimbus-control"
        thread.start()
    }

    /// Stops listening and removes the socket.
    package func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
        close(lock)
    }

    private static func serve(_ listener: Int32, handler: @escaping @Sendable (ControlRequest) async -> ControlResponse) {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return  // the listener was closed
            }
            // A thread a connection: a download asked for may take minutes, and status must still answer.
            Thread.detachNewThread { answer(connection, handler: handler) }
        }
    }

    private static func answer(_ connection: Int32, handler: @escaping @Sendable (ControlRequest) async -> ControlResponse) {
        var timeout = Self.timeout
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let response: ControlResponse
        if let line = readLine(connection) {
            if let request = try? JSONDecoder().decode(ControlRequest.self, from: line) {
                // This thread is not one of Swift's cooperative threads, so it may wait for the answer.
                let answered = Answer()
                let done = DispatchSemaphore(value: 0)
                Task {
                    answered.set(await handler(request))
                    done.signal()
                }
                done.wait()
                response = answered.get() ?? ControlResponse(error: "no answer")
            } else {
                response = ControlResponse(error: "not a request: send {\"command\":\"status\",\"path\":…} on one line")
            }
        } else {
            response = ControlResponse(error: "the request did not arrive whole within its time or size limit")
        }
        var bytes = (try? JSONEncoder().encode(response)) ?? Data()
        bytes.append(0x0A)
        _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(connection)
    }

    /// Sends one request to the daemon at `path` and waits (at most `timeout` seconds) for its answer.
    package static func ask(_ request: ControlRequest, at url: URL, timeout seconds: Int = 10) throws -> ControlResponse {
        let connection: Int32
        do {
            connection = try connect(url.path)
        } catch {
            let root = url.deletingLastPathComponent().deletingLastPathComponent().path
            throw NimbusError(
                .networkUnavailable, "no nimbus device daemon serves \(root) (start one: nimbus device run --root \(root))")
        }
        defer { close(connection) }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes = try JSONEncoder().encode(request)
        bytes.append(0x0A)
        let sent = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count, let line = readLine(connection, limit: 64 << 20) else {
            throw NimbusError(.networkUnavailable, "the daemon at \(url.path) did not answer")
        }
        return try JSONDecoder().decode(ControlResponse.self, from: line)
    }

    /// Bytes up to the first newline (or the end), nil past `limit` or a timeout.
    private static func readLine(_ connection: Int32, limit: Int = maxRequestBytes) -> Data? {
        var line = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while line.count <= limit {
            let count = recv(connection, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return count == 0 && !line.isEmpty ? line : nil }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) {
                line.append(contentsOf: buffer[0..<newline])
                return line
            }
            line.append(contentsOf: buffer[0..<count])
        }
        return nil
    }

    private static func connect(_ path: String) throws -> Int32 {
        let connection = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard connection >= 0 else { throw failure("cannot open a Unix socket") }
        var address = try address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(connection, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(connection)
            throw failure("cannot connect to \(path)")
        }
        return connection
    }

    private static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw NimbusError.badRequest(
                "the control socket's path \(path) is longer than \(capacity - 1) bytes; use a shorter root")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    private static func failure(_ what: String) -> NimbusError {
        NimbusError(.internalError, "\(what): \(String(cString: strerror(errno)))")
    }
}

/// The handler's answer, handed from its task to the socket's thread.
private final class Answer: @unchecked Sendable {
    private let lock = NSLock()
    private var response: ControlResponse?
    func set(_ response: ControlResponse) { lock.withLock { self.response = response } }
    func get() -> ControlResponse? { lock.withLock { response } }
}
