import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// HTTP connections of clients that send a whole body before reading the answer, or stop mid-request.
@Suite struct ConnectionTests {
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
        defer { Task { await server.stop() } }
        let app = try await server.seedApp()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        // Far more than the socket buffers hold, so the client blocks unless the server reads it all.
        let body = Data(repeating: UInt8(ascii: "x"), count: 16 << 20)
        let path = "/kv/1/\(app.storeIdentifier)/modify"
        let exchange = try await server.rawExchange(
            Self.head(path, session: ann, apiToken: app.apiToken, contentLength: body.count) + body)
        #expect(exchange.sentAll, "the server stopped reading the body")
        #expect(exchange.closedByServer)
        #expect(exchange.text.hasPrefix("HTTP/1.1 413") && exchange.text.contains("REQUEST_TOO_LARGE"), "\(exchange.text.prefix(200))")
        let values = try await server.request(.GET, "/kv/1/\(app.storeIdentifier)/values", session: ann, apiToken: app.apiToken)
        #expect(values.status == 200 && !String(decoding: values.body, as: UTF8.self).contains("xxx"), "nothing was written")
    }

    @Test func aConnectionLeftIdleMidRequestIsClosed() async throws {
        let server = try await TestServer.start { $0.idleTimeout = .milliseconds(300) }
        defer { Task { await server.stop() } }
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
        let server = try await TestServer.start { $0.idleTimeout = .milliseconds(300) }
        defer { Task { await server.stop() } }
        let silent = try await server.rawExchange(Data())
        #expect(silent.closedByServer && silent.received.isEmpty)
        let unfinishedHead = try await server.rawExchange(Data("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8))
        #expect(unfinishedHead.closedByServer && unfinishedHead.received.isEmpty)
        let whole = try await server.rawExchange(Data("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        #expect(whole.text.hasPrefix("HTTP/1.1 200"), "\(whole.text.prefix(200))")
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
}
