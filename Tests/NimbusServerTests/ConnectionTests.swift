import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// HTTP connections of clients that send a whole body before reading the answer, or stop mid-request.
@Suite(.cleansUp) struct ConnectionTests {
    /// A request's head, with credentials, asking the server to close the connection after answering.
    static func head(_ path: String, session: NimbusSession, apiToken: String, contentLength: Int) -> Data {
        Data(
            """
            POST \(path) HTTP/1.1\r
            Host: 127.0.0.1\r
            Authorization: Bearer \(session.sessionToken)\r
            X-Nimbus-API-Token: \(apiToken)\r
            Content-Type: application/json\r
            Content-Length: \(contentLength)\r
            Connection: close\r
            \r

            """.utf8)
    }

    @Test func anOversizedBodySentWholeBeforeReadingGetsItsAnswer() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        // Far more than the socket buffers hold, so the client blocks unless the server reads it all.
        let body = Data(repeating: UInt8(ascii: "x"), count: 16 << 20)
        let path = "/kv/1/\(app.storeIdentifier)/modify"
        let exchange = try await server.rawExchange(
            Self.head(path, session: ann, apiToken: app.apiToken, contentLength: body.count) + body)
        #expect(exchange.sentAll, "the server stopped reading the body")
        #expect(exchange.closedByServer)
        #expect(
            exchange.text.hasPrefix("HTTP/1.1 413") && exchange.text.contains("REQUEST_TOO_LARGE"), "\(exchange.text.prefix(200))"
        )
        let values = try await server.request(.GET, "/kv/1/\(app.storeIdentifier)/values", session: ann, apiToken: app.apiToken)
        #expect(values.status == 200 && !String(decoding: values.body, as: UTF8.self).contains("xxx"), "nothing was written")
    }

    @Test func aConnectionLeftIdleMidRequestIsClosed() async throws {
        let server = try await TestServer.start { $0.idleTimeout = .milliseconds(300) }
        let app = try await server.seedApp()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        // Ten bytes of a promised thousand, then silence.
        let exchange = try await server.rawExchange(
            Self.head("/kv/1/\(app.storeIdentifier)/modify", session: ann, apiToken: app.apiToken, contentLength: 1000)
                + Data(#"{"operati"#.utf8))
        #expect(exchange.closedByServer)
        #expect(try await server.request(.GET, "/health").status == 200)
    }

    @Test func connectionsThatNeverSendARequestHeadAreClosed() async throws {
        let server = try await TestServer.start { $0.requestHeadTimeout = .milliseconds(300) }
        let silent = try await server.rawExchange(Data())
        #expect(silent.closedByServer && silent.received.isEmpty)
        let unfinishedHead = try await server.rawExchange(Data("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8))
        #expect(unfinishedHead.closedByServer && unfinishedHead.received.isEmpty)
        let whole = try await server.rawExchange(
            Data("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        #expect(whole.text.hasPrefix("HTTP/1.1 200"), "\(whole.text.prefix(200))")
    }

    /// RFC 9112 §9.3: an HTTP/1.0 connection persists only when the request asks for it, and the answer says
    /// it does; otherwise the server closes it after the answer (ApacheBench waits for that close).
    @Test func http10ConnectionsPersistOnlyWhenAskedTo() async throws {
        let server = try await TestServer.start()
        let plain = try await server.rawExchange(Data("GET /health HTTP/1.0\r\n\r\n".utf8))
        #expect(plain.closedByServer, "an HTTP/1.0 request without keep-alive left its connection open")
        #expect(plain.text.hasPrefix("HTTP/1.1 200") && plain.text.lowercased().contains("connection: close"), "\(plain.text)")

        let persistent = try await server.rawExchange(
            Data("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /health HTTP/1.0\r\n\r\n".utf8))
        let answers = persistent.text.components(separatedBy: "HTTP/1.1 200").dropFirst().map { $0.lowercased() }
        #expect(answers.count == 2, "the kept-alive connection did not answer its second request: \(persistent.text)")
        #expect(answers.first?.contains("connection: keep-alive") == true, "\(persistent.text)")
        #expect(answers.last?.contains("connection: close") == true, "\(persistent.text)")
        #expect(persistent.closedByServer)
    }

    /// HTTP/1.1 connections persist unless the request says `Connection: close`.
    @Test func http11ConnectionsPersistUntilTheClientAsksToClose() async throws {
        let server = try await TestServer.start()
        let exchange = try await server.rawExchange(
            Data(
                "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
        let answers = exchange.text.components(separatedBy: "HTTP/1.1 200").dropFirst().map { $0.lowercased() }
        #expect(answers.count == 2, "\(exchange.text)")
        #expect(answers.first?.contains("connection: close") == false, "\(exchange.text)")
        #expect(exchange.closedByServer)
    }

    @Test func gracefulShutdownEndsConnectionsThatNeverSentARequestHead() async throws {
        // The idle timeout (75 s by default) is far longer than the shutdown may take.
        let server = try await TestServer.start()
        let (sent, sentOne) = AsyncStream.makeStream(of: Void.self)
        async let silent = server.rawExchange(Data(), timeout: .seconds(40), sent: { sentOne.yield() })
        async let unfinishedHead = server.rawExchange(
            Data("GET /health HTTP/1.1\r\n".utf8), timeout: .seconds(40), sent: { sentOne.yield() })
        var connected = sent.makeAsyncIterator()
        await connected.next()
        await connected.next()
        // The server accepts connections in order: once this request is answered, it holds the two above.
        #expect(try await server.request(.GET, "/health").status == 200)
        let stopping = ContinuousClock.now
        await server.stop()
        #expect(ContinuousClock.now - stopping < .seconds(10), "shutdown waited on connections without a request")
        #expect(try await silent.closedByServer)
        #expect(try await unfinishedHead.closedByServer)
    }

    /// Requests the decoder cannot read, or whose URL or headers are larger than the server reads, are
    /// answered at once with a status and a code that say which, and the connection is closed.
    @Test(arguments: [
        (
            "a stray byte in the request line", Data("GET /he".utf8) + [0xFF] + Data("alth HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            400, ErrorCode.badRequest
        ),
        (
            "a 100 KB header",
            Data("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 100_000))\r\n\r\n".utf8), 431,
            .headersTooLarge
        ),
        (
            "10,000 headers",
            Data(("GET /health HTTP/1.1\r\nHost: x\r\n" + (0..<10_000).map { "X-H\($0): v\r\n" }.joined() + "\r\n").utf8), 431,
            .headersTooLarge
        ),
        (
            "a 1 MB URL", Data("GET /health?\(String(repeating: "a", count: 1_000_000)) HTTP/1.1\r\nHost: x\r\n\r\n".utf8), 414,
            .uriTooLong
        ),
    ])
    func malformedRequestsAreAnsweredAtOnce(_ name: String, request: Data, status: Int, code: ErrorCode) async throws {
        let server = try await TestServer.start()
        do {
            // Far shorter than the idle (75 s) and head (10 s) timeouts that used to end such connections.
            let exchange = try await server.rawExchange(request, timeout: .seconds(5))
            #expect(exchange.closedByServer, "\(name)")
            #expect(exchange.text.hasPrefix("HTTP/1.1 \(status) "), "\(name): \(exchange.text.prefix(100))")
            let body = exchange.text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
            #expect(try JSONDecoder().decode(NimbusError.self, from: Data(body.utf8)).code == code, "\(name): \(body)")
            #expect(try await server.request(.GET, "/health").status == 200)
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }

    /// A client that sends a request head a byte at a time is cut off once the head has taken longer than
    /// the head timeout, on its first request or a later one; a connection idle between requests is not.
    @Test func headsSentByteByByteAreCutOffAtTheHeadTimeout() async throws {
        let server = try await TestServer.start {
            $0.requestHeadTimeout = .milliseconds(600)
            $0.idleTimeout = .seconds(30)
        }
        do {
            // Ten seconds of head, a byte every 50 ms: cut off long before its end.
            let head = Data(
                "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: \(String(repeating: "p", count: 160))\r\n\r\n".utf8)
            let slowly = head.map { Data([$0]) }
            let first = try await server.rawExchange(pieces: slowly, pause: .milliseconds(50), timeout: .seconds(30))
            #expect(first.closedByServer && first.received.isEmpty && !first.sentAll)

            let answered = Data("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            let second = try await server.rawExchange(
                pieces: [answered, Data()] + slowly, pause: .milliseconds(50), timeout: .seconds(30))
            #expect(second.closedByServer && !second.sentAll)
            #expect(
                second.text.hasPrefix("HTTP/1.1 200") && second.text.components(separatedBy: "HTTP/1.1").count == 2,
                "\(second.text.debugDescription)")

            // Idle between requests for longer than the head timeout: the next request is still served.
            let idle = try await server.rawExchange(
                pieces: [answered, Data(), Data(), answered.dropLast(4) + Data("\r\nConnection: close\r\n\r\n".utf8)],
                pause: .milliseconds(500),
                timeout: .seconds(20))
            #expect(idle.text.components(separatedBy: "HTTP/1.1 200").count == 3, "\(idle.text)")
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }

    /// One client address cannot take every socket: past its limit its connections are closed as they
    /// come, while other addresses are served.
    @Test func aClientAddressHoldsAtMostItsLimitOfConnections() async throws {
        let server = try await TestServer.start { $0.maxConnectionsPerAddress = 4 }
        do {
            let (sent, sentOne) = AsyncStream.makeStream(of: Void.self)
            let held = (0..<4).map { _ in
                Task {
                    try await server.rawExchange(pieces: [Data("GET /he".utf8)], timeout: .seconds(4), sent: { sentOne.yield() })
                }
            }
            var connected = sent.makeAsyncIterator()
            for _ in held { await connected.next() }
            let health = Data("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
            // The server accepts in order: once another address's request is answered, it holds the four above.
            let other = try await server.rawExchange(pieces: [health], from: "127.0.0.2")
            #expect(other.text.hasPrefix("HTTP/1.1 200"))
            let fifth = try await server.rawExchange(pieces: [health], timeout: .seconds(3))
            #expect(fifth.closedByServer && fifth.received.isEmpty, "\(fifth.text)")
            for connection in held { #expect(try await connection.value.closedByServer == false, "held until the client let go") }
            let afterwards = try await server.rawExchange(pieces: [health])
            #expect(afterwards.text.hasPrefix("HTTP/1.1 200"), "a connection closed frees its place")
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }
}
