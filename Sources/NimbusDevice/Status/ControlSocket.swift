import Foundation
import NimbusCore
import NimbusKit

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's Unix domain socket (`ROOT/.nimbus/control.sock`, in an owner-only folder), through which
/// the CLI and apps ask what the daemon is doing. A request and its answer are one JSON object on one line
/// each; each connection is read on a thread of its own, may take at most `timeout` to send its request, and
/// is answered on the device's threads (`DeviceExecutor`).
package final class ControlSocket: Sendable {
    private let path: String
    private let listener: Int32
    /// Held (`flock`) while this daemon serves the root.
    private let lock: Int32
    static let timeout = timeval(tv_sec: 2, tv_usec: 0)
    static let maxRequestBytes = 64 << 10

    /// Answers a request: the answer, and for a watch the updates to send after it until the client hangs
    /// up (the stream is then cancelled).
    package typealias Handler = @Sendable (ControlRequest) async -> (ControlResponse, AsyncStream<ControlResponse>?)

    /// Where a device root's daemon listens.
    package static func path(root: URL) -> URL { DaemonConnection.socketPath(root: root) }

    /// Listens at `path` and answers each request with `handler`. Refuses when another daemon answers there
    /// already (one daemon a root: two would sync the same folder against each other).
    package init(path url: URL, handler: @escaping Handler) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard chmod(directory.path, 0o700) == 0 else { throw UnixSocket.failure("cannot make \(directory.path) owner-only") }
        path = url.path
        // The lock makes "one daemon a root" hold for two started at once; the kernel drops it with the process.
        let lock = open(directory.appendingPathComponent("daemon.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw UnixSocket.failure("cannot open the lock in \(directory.path)") }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0, (try? UnixSocket.connect(path)).map({ close($0) }) == nil else {
            close(lock)
            throw NimbusError(.conflict, "another nimbus device daemon serves \(directory.deletingLastPathComponent().path)")
        }
        self.lock = lock
        unlink(path)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw UnixSocket.failure("cannot open a Unix socket") }
        self.listener = listener
        do {
            // Bound under a temporary name, made owner-only, then renamed: no one ever sees it otherwise.
            let temporary = path + ".\(getpid())"
            unlink(temporary)
            var address = try UnixSocket.address(temporary)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard bound == 0, chmod(temporary, 0o600) == 0, listen(listener, 16) == 0, rename(temporary, path) == 0 else {
                unlink(temporary)
                throw UnixSocket.failure("cannot listen at \(path)")
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

    private static func serve(_ listener: Int32, handler: @escaping Handler) {
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

    /// On the connection's own thread: reads the request, has the device's threads answer it (and, for a
    /// watch, send the updates after it), and for a watch waits for the client to hang up.
    private static func answer(_ connection: Int32, handler: @escaping Handler) {
        var timeout = Self.timeout
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let line = LineReader(connection, limit: maxRequestBytes).next() else {
            _ = send(ControlResponse(error: "the request did not arrive whole within its time or size limit"), on: connection)
            close(connection)
            return
        }
        guard let request = try? JSONDecoder().decode(ControlRequest.self, from: line) else {
            _ = send(
                ControlResponse(error: "not a request: send {\"command\":\"status\",\"path\":…} on one line"), on: connection)
            close(connection)
            return
        }
        let answered = DispatchSemaphore(value: 0)
        let exchange = Task(executorPreference: DeviceExecutor.shared) {
            defer {
                // Ends a watch's wait below too (what was sent still reaches the client).
                shutdown(connection, Int32(SHUT_RDWR))
                answered.signal()
            }
            let (response, updates) = await handler(request)
            guard send(response, on: connection), let updates else { return }
            // A watch: updates go out as they come, until the client hangs up (this task is then cancelled),
            // stops reading (a send times out) or the updates end.
            for await update in updates where !send(update, on: connection) { break }
        }
        if request.command == .watch {
            var forever = timeval(tv_sec: 0, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
            var byte: UInt8 = 0
            while recv(connection, &byte, 1, 0) > 0 {}
            exchange.cancel()
        }
        // This thread is not one of Swift's cooperative threads, so it may wait; the descriptor is closed once
        // nothing uses it any more.
        answered.wait()
        close(connection)
    }

    private static func send(_ response: ControlResponse, on connection: Int32) -> Bool {
        let pieces = (try? response.pieces()) ?? [Array("{}\n".utf8)]
        return pieces.allSatisfy { UnixSocket.send($0, on: connection) }
    }
}
