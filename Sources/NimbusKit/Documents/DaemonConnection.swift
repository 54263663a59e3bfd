import Foundation
import NimbusCore

#if canImport(Glibc)
    import Glibc
#endif

/// Talks to a device root's daemon over its control socket (`ROOT/.nimbus/control.sock`): one request
/// and its answer, or a watch whose answers keep coming. Blocking socket calls run on threads of their
/// own, never on Swift's cooperative pool.
package enum DaemonConnection {
    /// Where a device root's daemon listens.
    package static func socketPath(root: URL) -> URL {
        root.appendingPathComponent(".nimbus").appendingPathComponent("control.sock")
    }

    /// Sends one request and waits (at most `timeout` seconds) for its answer, errors included.
    package static func ask(_ request: ControlRequest, at url: URL, timeout seconds: Int = 10) throws -> ControlResponse {
        let connection = try open(url)
        defer { close(connection) }
        try send(request, on: connection, timeout: seconds)
        guard let response = try ControlResponse.read(from: LineReader(connection)) else {
            throw NimbusError(.networkUnavailable, "the daemon at \(url.path) did not answer within \(seconds) s")
        }
        return response
    }

    /// `ask`, off the caller's task, throwing the error an answer carries.
    package static func request(_ request: ControlRequest, root: URL, timeout: Int = 10) async throws -> ControlResponse {
        let socket = socketPath(root: root)
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try ask(request, at: socket, timeout: timeout).get() })
            }
        }
    }

    /// A watch: the daemon's first answer, then each update as it comes, until `Watch.cancel()` or the
    /// daemon goes away (the stream then ends with an error).
    package static func watch(_ request: ControlRequest, root: URL) async throws -> Watch {
        let socket = socketPath(root: root)
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    let connection = try open(socket)
                    do {
                        try send(request, on: connection, timeout: 10)
                        let lines = LineReader(connection)
                        guard let first = try ControlResponse.read(from: lines)?.get() else {
                            throw NimbusError(.networkUnavailable, "the daemon at \(socket.path) did not answer")
                        }
                        continuation.resume(returning: Watch(connection: connection, lines: lines, first: first))
                    } catch {
                        close(connection)
                        throw error
                    }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// A watch's connection: its first answer and the updates after it.
    package final class Watch: @unchecked Sendable {
        package let first: ControlResponse
        package let updates: AsyncThrowingStream<MetadataUpdate, any Error>
        private let connection: Int32
        /// Guards the descriptor: closed once, by the reading thread, and never touched after (its number may
        /// be another file's by then).
        private let lock = NSLock()
        private var closed = false

        init(connection: Int32, lines: LineReader, first: ControlResponse) {
            self.connection = connection
            self.first = first
            let (updates, continuation) = AsyncThrowingStream.makeStream(of: MetadataUpdate.self)
            self.updates = updates
            var forever = timeval(tv_sec: 0, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
            let thread = Thread { [self] in
                while let response = try? ControlResponse.read(from: lines) {
                    if let update = response.update { continuation.yield(update) }
                }
                lock.withLock {
                    closed = true
                    close(connection)
                }
                continuation.finish(throwing: NimbusError(.networkUnavailable, "the device daemon stopped"))
            }
            thread.name = "nimbus-watch"
            thread.start()
        }

        /// Hangs up; the daemon forgets the watch. Once or many times.
        package func cancel() { lock.withLock { if !closed { _ = shutdown(connection, Int32(SHUT_RDWR)) } } }
    }

    private static func open(_ url: URL) throws -> Int32 {
        do {
            return try UnixSocket.connect(url.path)
        } catch {
            let root = url.deletingLastPathComponent().deletingLastPathComponent().path
            throw NimbusError(
                .networkUnavailable, "no nimbus device daemon serves \(root) (start one: nimbus device run --root \(root))")
        }
    }

    private static func send(_ request: ControlRequest, on connection: Int32, timeout seconds: Int) throws {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes = try JSONEncoder().encode(request)
        bytes.append(0x0A)
        guard UnixSocket.send(bytes, on: connection) else {
            throw NimbusError(.networkUnavailable, "the device daemon hung up")
        }
    }
}

/// Lines read from a socket through a buffer (one `recv` for many lines). The daemon reads requests with it,
/// apps read answers.
package final class LineReader: @unchecked Sendable {
    private let connection: Int32
    /// A line longer than this ends the reading (a broken or hostile peer).
    private let limit: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk: [UInt8]

    package init(_ connection: Int32, limit: Int = 1 << 30) {
        self.connection = connection
        self.limit = limit
        chunk = [UInt8](repeating: 0, count: min(256 << 10, limit + 1))
    }

    /// The next `count` lines in one buffer, with where each lies in it (without its newline); nil when the
    /// connection ends, times out or passes the limit first. With `expectedBytes` (what the sender says the lines
    /// take) the buffer is sized once rather than grown and copied again and again; it is handed over whole,
    /// not copied (100,000 rows are megabytes).
    package func nextLines(_ count: Int, expectedBytes: Int = 0) -> (bytes: [UInt8], lines: [Range<Int>])? {
        // The sender's word sizes at most 256 MiB ahead; past that the buffer grows as the bytes arrive.
        buffer.reserveCapacity(start + min(max(expectedBytes, 0), limit, 256 << 20) + chunk.count)
        var lines: [Range<Int>] = []
        lines.reserveCapacity(min(count, 1 << 20))
        while lines.count < count {
            guard let line = nextLine(endingWithTheConnection: false) else { return nil }
            lines.append(line)
        }
        // What arrived after the lines stays for the next read.
        let rest = Array(buffer[start...])
        buffer.removeSubrange(start...)
        defer { (buffer, start) = (rest, 0) }
        return (buffer, lines)
    }

    /// The next line without its newline (at the end, what is left); nil at the end, on a timeout, or past the limit.
    package func next() -> Data? { nextBytes().map { Data($0) } }

    package func nextBytes() -> [UInt8]? {
        guard let line = nextLine(endingWithTheConnection: true) else { return nil }
        defer { compact() }
        return Array(buffer[line])
    }

    /// Where the next line lies in the buffer (without its newline), receiving until it has arrived; with
    /// `endingWithTheConnection`, what is left when the connection ends is one too. Nil at the end, on a timeout,
    /// or past the limit. The buffer keeps what it holds until `compact()`.
    private func nextLine(endingWithTheConnection: Bool) -> Range<Int>? {
        var searched = start
        while true {
            if let newline = newline(from: searched) {
                defer { start = newline + 1 }
                return start..<newline
            }
            searched = buffer.count
            guard buffer.count - start <= limit else { return nil }
            let count = recv(connection, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                guard endingWithTheConnection, count == 0, start < buffer.count else { return nil }
                defer { start = buffer.count }
                return start..<buffer.count
            }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }

    /// Where the buffer's first newline at or after `index` is.
    private func newline(from index: Int) -> Int? {
        buffer.withUnsafeBytes { raw in
            guard index < raw.count, let found = memchr(raw.baseAddress! + index, 0x0A, raw.count - index) else { return nil }
            return raw.baseAddress!.distance(to: UnsafeRawPointer(found))
        }
    }

    /// Lets go of the lines read, once they are a megabyte.
    private func compact() {
        guard start > 1 << 20 else { return }
        buffer.removeSubrange(0..<start)
        start = 0
    }
}

/// The few Unix socket calls the daemon and its clients share.
package enum UnixSocket {
    /// Sends all of `bytes`; whether the peer took them.
    package static func send(_ bytes: some ContiguousBytes, on connection: Int32) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = Glibc.send(connection, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 && errno == EINTR { continue }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }
    }

    package static func connect(_ path: String) throws -> Int32 {
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

    package static func address(_ path: String) throws -> sockaddr_un {
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

    package static func failure(_ what: String) -> NimbusError {
        NimbusError(.internalError, "\(what): \(String(cString: strerror(errno)))")
    }
}
