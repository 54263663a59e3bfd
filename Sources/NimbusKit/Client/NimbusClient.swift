import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NimbusCore

/// A thin JSON-over-HTTP client for the Nimbus wire protocol.
///
/// Errors come back as `NimbusError` with the server's code; a server that cannot be reached is
/// `NETWORK_UNAVAILABLE`.
package struct NimbusClient: Sendable {
    package let server: URL
    package let apiToken: String?
    package let sessionToken: String?
    /// Worked out once: every request starts from them.
    private let base: String
    private let headers: HTTPHeaders
    /// Which server certificates this client accepts.
    package let trust: ServerTrust
    /// The SDK's own HTTP client, shared by every `NimbusClient` of the process with the same trust. It does
    /// not retry failed connection attempts itself: an unreachable server must surface at once as
    /// `NETWORK_UNAVAILABLE` so callers work offline, and the sync engine retries with its own backoff. It
    /// keeps up to 32 connections to a server (AsyncHTTPClient's default is 8), so a process acting for many
    /// users, like a service or the benchmarks' 16 writers, does not queue their requests behind each other.
    private var http: HTTPClient { trust.httpClient }

    /// Responses larger than this are refused (a full key-value store is about 1.4 MB as JSON).
    static let maxResponseBytes = 64 << 20

    package init(server: URL, apiToken: String? = nil, sessionToken: String? = nil, trust: ServerTrust = .processDefault) {
        self.server = server
        self.trust = trust
        self.apiToken = apiToken
        self.sessionToken = sessionToken
        base = server.absoluteString.trimmingSuffix("/")
        var headers = HTTPHeaders()
        if let apiToken { headers.add(name: "X-Nimbus-API-Token", value: apiToken) }
        if let sessionToken { headers.add(name: "Authorization", value: "Bearer \(sessionToken)") }
        self.headers = headers
    }

    package init(session: NimbusSession, apiToken: String?) {
        self.init(server: session.server, apiToken: apiToken, sessionToken: session.sessionToken, trust: session.trust)
    }

    /// Sends a request and decodes the JSON answer.
    package func send<Response: Decodable>(_ method: HTTPMethod, _ path: String, body: (some Encodable)? = nil as Never?)
        async throws -> Response
    {
        try await send(method, path, body: body.map { try JSONEncoder().encode($0) }) {
            try JSONDecoder().decode(Response.self, from: $0)
        }
    }

    /// Sends a body the caller encoded and reads the answer with `decode` (for wire types coded by hand).
    package func send<Response>(_ method: HTTPMethod, _ path: String, body: Data?, decode: (Data) throws -> Response) async throws
        -> Response
    {
        let data = try await sendRaw(method, path, body: body)
        do {
            return try decode(data)
        } catch {
            throw NimbusError(.internalError, "the server's answer to \(method) \(path) was not understood: \(error)")
        }
    }

    /// Sends a request whose answer has no body.
    package func send(_ method: HTTPMethod, _ path: String, body: (some Encodable)? = nil as Never?) async throws {
        _ = try await sendRaw(method, path, body: body.map { try JSONEncoder().encode($0) })
    }

    /// Sends raw bytes and returns the raw answer, throwing the server's error for a non-2xx status.
    package func sendRaw(_ method: HTTPMethod, _ path: String, body: Data?) async throws -> Data {
        Data(
            try await transfer(
                method, url: base + path, headers: headers, body: body.map { ByteBuffer(bytes: $0) },
                contentType: "application/json"
            ).readableBytesView)
    }

    /// Sends raw bytes (`application/octet-stream`) with the session and API token, and returns the answer's
    /// bytes as they arrived: a chunk's bytes are copied once on each side of the request (into the buffer
    /// sent, out of the buffer received), not again into `Data`.
    package func sendBytes(_ method: HTTPMethod, _ path: String, body: ByteBuffer?) async throws -> ByteBuffer {
        try await transfer(method, url: base + path, headers: headers, body: body, contentType: "application/octet-stream")
    }

    /// `sendBytes` whose answer is written into `buffer` (emptied first) instead of a buffer of its own. A
    /// buffer the caller hands over alone is written in place: its memory is in use already, where a fresh
    /// megabyte is mapped afresh and its every page's first touch is a fault.
    package func sendBytes(
        _ method: HTTPMethod, _ path: String, body: ByteBuffer?, into buffer: consuming ByteBuffer
    ) async throws -> ByteBuffer {
        try await transfer(
            method, url: base + path, headers: headers, body: body, contentType: "application/octet-stream", into: consume buffer)
    }

    /// Sends bytes to a URL the server handed out (an asset's upload or download URL), which carries its
    /// own credential, so the session and API token are not sent along.
    package func transfer(_ method: HTTPMethod, url: String, body: Data?) async throws -> Data {
        Data(
            try await transfer(
                method, url: url, headers: [:], body: body.map { ByteBuffer(bytes: $0) }, contentType: "application/octet-stream"
            ).readableBytesView)
    }

    private func transfer(
        _ method: HTTPMethod, url: String, headers: HTTPHeaders, body: ByteBuffer?, contentType: String,
        into reused: consuming ByteBuffer? = nil
    ) async throws -> ByteBuffer {
        let path = url
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers = headers
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(body)
        }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await execute(request)
            if var target = consume reused {
                target.clear()
                for try await var part in response.body {
                    guard target.readableBytes + part.readableBytes <= Self.maxResponseBytes else {
                        throw NIOTooManyBytesError(maxBytes: Self.maxResponseBytes)
                    }
                    target.writeBuffer(&part)
                }
                bytes = target
            } else {
                bytes = try await response.body.collect(upTo: Self.maxResponseBytes)
            }
        } catch {
            throw NimbusError(.networkUnavailable, "could not reach \(base): \(error)")
        }
        guard (200..<300).contains(response.status.code) else {
            if let error = try? JSONDecoder().decode(NimbusError.self, from: Data(bytes.readableBytesView)) { throw error }
            throw NimbusError(.internalError, "\(method) \(path) answered HTTP \(response.status.code)")
        }
        return bytes
    }
}

extension NimbusClient {
    /// How many times a refused request is sent again while the server is found listening: each connection
    /// attempt the pool had begun before (at most as many as it keeps to a host) fails it at most once.
    private static let refusalsRetried = ServerTrust.connectionsPerHost

    /// Sends `request`, again when its connection was refused while the server listens. AsyncHTTPClient fails
    /// every request queued for a server with the error of any connection attempt that fails, even an attempt
    /// begun before the request was made: right after a restarted server listens again, a request can be refused
    /// by attempts made while it was down, several in a row when many requests were failing then. A refused
    /// attempt sent nothing, so sending again is safe for every method; whether the server is down is asked of a
    /// connection begun after the refusal (`listens`), not guessed from how many refusals came: three, once, were
    /// all left over from the outage on a loaded machine.
    fileprivate func execute(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        var refusals = 0
        while true {
            do {
                return try await http.execute(request, timeout: .seconds(60))
            } catch let error where Self.isRefusal(error) && refusals < Self.refusalsRetried {
                refusals += 1
                guard await listens(at: request.url) else { throw error }
            }
        }
    }

    /// Whether the server at `url` takes a connection now: one of its own, closed at once.
    private func listens(at url: String) async -> Bool {
        guard let url = URL(string: url), let host = url.host else { return false }
        let port = url.port ?? (url.scheme == "https" ? 443 : 80)
        do {
            let channel = try await ClientBootstrap(group: http.eventLoopGroup).connectTimeout(.seconds(10))
                .connect(host: host, port: port).get()
            try? await channel.close()
            return true
        } catch {
            return false
        }
    }

    /// Whether `error` is a connection attempt the server's host refused: to an address, or to every address
    /// of a name.
    private static func isRefusal(_ error: any Error) -> Bool {
        switch error {
        case let error as IOError: error.errnoCode == ECONNREFUSED
        case let error as NIOConnectionError:
            !error.connectionErrors.isEmpty && error.connectionErrors.allSatisfy { isRefusal($0.error) }
        default: false
        }
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
