import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusTesting
import NimbusTestingCore
import Testing

/// `/dav/`: a container's documents over WebDAV, signed in with app passwords, checked with real clients
/// (litmus, rclone) and against real devices (`nimbus device run`).
@Suite(.cleansUp) struct WebDAVTests {
    /// A WebDAV client's view: the user name and app password it sends with every request.
    struct Client {
        let server: TestServer
        let userName: String
        let password: String
        let container: String

        var url: String { server.url.absoluteString + "/dav/\(container)/" }

        func request(
            _ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], body: Data? = nil,
            password: String? = nil
        ) async throws -> RawResponse {
            let credentials = Data("\(userName):\(password ?? self.password)".utf8).base64EncodedString()
            return try await server.request(
                method, "/dav/\(container)/\(path)", headers: [("Authorization", "Basic \(credentials)")] + headers, body: body)
        }
    }

    static func client(
        _ server: TestServer, _ app: TestServer.SeededApp, name: String = "WebDAV", keepFinderFiles: Bool = false
    ) async throws -> Client {
        let session = try await server.signIn(email: "ann@example.com", device: "settings")
        let created = try await NimbusAccount.createAppPassword(session, name: name, keepFinderFiles: keepFinderFiles)
        return Client(
            server: server, userName: created.userName, password: try #require(created.password), container: app.container)
    }

    /// litmus, the WebDAV test suite Apache's and WsgiDAV's authors test with: every one of its 104 tests
    /// (basic, copymove, props, locks, http) passes.
    @Test func litmusPassesEveryTest() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let client = try await Self.client(server, app)
        // litmus writes its traces (debug.log, child.log) into the folder it runs in.
        let folder = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let litmus = ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/litmus"), arguments: [client.url, client.userName, client.password],
            workingDirectory: folder)
        let output = try await litmus.run()
        let summaries = output.stdout.split(separator: "\n").filter { $0.contains("<- summary for") }
        let passed = summaries.compactMap { line -> Int? in
            guard let run = line.range(of: " tests run: ") else { return nil }
            return Int(line[run.upperBound...].prefix { $0.isNumber })
        }
        #expect(output.status == 0, "\(output.stdout.suffix(4000))\(output.stderr)")
        #expect(summaries.count == 5 && summaries.allSatisfy { $0.contains(" 0 failed") }, "\(summaries)")
        #expect(passed.reduce(0, +) == 104, "\(summaries)")
    }

    /// Only app passwords sign in: the account's password is refused with a reason, a missing one is
    /// challenged, and a revoked one stops working at once.
    @Test func appPasswordsSignInUntilRevoked() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let client = try await Self.client(server, app, name: "Laptop Finder")
        let listing = try await client.request(.RAW(value: "PROPFIND"), "", headers: [("Depth", "0")])
        #expect(listing.status == 207, "\(String(decoding: listing.body, as: UTF8.self))")

        let account = try await client.request(
            .RAW(value: "PROPFIND"), "", headers: [("Depth", "0")], password: TestServer.password)
        #expect(account.status == 401 && account.errorCode == .authenticationFailed)
        #expect(String(decoding: account.body, as: UTF8.self).contains("app password"))
        let anonymous = try await server.request(.RAW(value: "PROPFIND"), "/dav/\(app.container)/", headers: [("Depth", "0")])
        #expect(anonymous.status == 401 && anonymous.headers["WWW-Authenticate"].first?.hasPrefix("Basic realm=") == true)
        let wrongName = Client(server: server, userName: "bob@example.com", password: client.password, container: app.container)
        #expect(try await wrongName.request(.RAW(value: "PROPFIND"), "", headers: [("Depth", "0")]).status == 401)

        let session = try await server.signIn(email: "ann@example.com", device: "settings")
        let passwords = try await NimbusAccount.appPasswords(session)
        #expect(passwords.map(\.name) == ["Laptop Finder"] && passwords.allSatisfy { $0.password == nil })
        try await NimbusAccount.revokeAppPassword(session, deviceID: try #require(passwords.first?.deviceID))
        let revoked = try await client.request(.RAW(value: "PROPFIND"), "", headers: [("Depth", "0")])
        #expect(revoked.status == 401 && revoked.errorCode == .authenticationFailed)
        #expect(try await NimbusAccount.appPasswords(session).isEmpty)
        // A session signed in with the account's password is no app password: it is never revoked as one.
        await #expect(throws: NimbusError.self) {
            try await NimbusAccount.revokeAppPassword(session, deviceID: session.deviceID)
        }
    }

    /// Bad input gets a clear answer and changes nothing.
    @Test func badRequestsAreRefusedWithoutChanges() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let client = try await Self.client(server, app)
        let infinite = try await client.request(.RAW(value: "PROPFIND"), "", headers: [("Depth", "infinity")])
        #expect(infinite.status == 403 && String(decoding: infinite.body, as: UTF8.self).contains("propfind-finite-depth"))
        let malformed = try await client.request(
            .RAW(value: "PROPFIND"), "", headers: [("Depth", "1")], body: Data("<D:propfind xmlns:D=\"DAV:\">".utf8))
        #expect(malformed.status == 400 && malformed.errorCode == .badRequest)
        let orphan = try await client.request(.PUT, "No%20such%20folder/a.txt", body: Data("x".utf8))
        #expect(orphan.status == 409)
        let badIf = try await client.request(.PUT, "a.txt", headers: [("If", "(<urn:x")], body: Data("x".utf8))
        #expect(badIf.status == 400)
        let hugeTime = try await client.request(
            .PUT, "kept.txt", headers: [("X-OC-Mtime", "9223372036854775807")], body: Data("kept".utf8))
        #expect(hugeTime.status == 201 && hugeTime.headers["X-OC-Mtime"].isEmpty)
        let elsewhere = try await client.request(
            .MOVE, "kept.txt", headers: [("Destination", "http://elsewhere/dav/iCloud.other/kept.txt")])
        #expect(elsewhere.status == 502)
        let relative = try await client.request(.COPY, "kept.txt", headers: [("Destination", "kept.txt")])
        #expect(relative.status == 400)
        let onto = try await client.request(.COPY, "kept.txt", headers: [("Destination", "/dav/\(app.container)/kept.txt")])
        #expect(onto.status == 403)
        let listing = try await client.request(.RAW(value: "PROPFIND"), "", headers: [("Depth", "1")])
        let text = String(decoding: listing.body, as: UTF8.self)
        #expect(listing.status == 207 && text.components(separatedBy: "<D:response>").count == 3, "\(text)")
        #expect(try await client.request(.GET, "kept.txt").body == Data("kept".utf8))

        // A user's HTML page is served as content in a sandbox, never as a page of the server's origin.
        #expect(try await client.request(.PUT, "page.html", body: Data("<script>alert(1)</script>".utf8)).status == 201)
        let page = try await client.request(.GET, "page.html")
        #expect(page.headers["Content-Security-Policy"].first?.contains("sandbox") == true)
        #expect(page.headers["X-Content-Type-Options"].first == "nosniff")

    }

    /// A file written over WebDAV reaches a device's folder, a device's file is readable over WebDAV at once,
    /// and a PUT based on a version a device has since replaced keeps both versions, as two devices' edits do.
    @Test func webDAVAndDevicesShareOneContainer() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let phone = try await DocumentCommandLineTests.devices(["phone"], server: server, app: app)[0]
        let client = try await Self.client(server, app)
        let daemon = try CommandLineTests.process(phone.run, server: server)
        _ = try await daemon.whileRunning(within: .seconds(30)) { printed in
            #expect(try await client.request(.RAW(value: "MKCOL"), "Documents").status == 201)
            let put = try await client.request(.PUT, "Documents/Caf%C3%A9%20list.txt", body: Data("milk".utf8))
            #expect(put.status == 201)
            let arrived = phone.folder.appendingPathComponent("Documents/Café list.txt")
            #expect(
                await eventually(timeout: .seconds(60)) {
                    FileManager.default.contents(atPath: arrived.path) == Data("milk".utf8)
                },
                "\(printed.errors)")

            try Data("milk, eggs".utf8).write(to: arrived)
            #expect(
                await eventually(timeout: .seconds(60)) {
                    let get = try? await client.request(.GET, "Documents/Caf%C3%A9%20list.txt")
                    return get?.body == Data("milk, eggs".utf8)
                })
            let seen = try await client.request(.GET, "Documents/Caf%C3%A9%20list.txt")
            let etag = try #require(seen.headers["ETag"].first)

            // The phone saves again; a WebDAV client still editing the version it read saves after it.
            try Data("milk, eggs, bread".utf8).write(to: arrived)
            #expect(
                await eventually(timeout: .seconds(60)) {
                    let head = try? await client.request(.HEAD, "Documents/Caf%C3%A9%20list.txt")
                    return head?.headers["ETag"].first.map { $0 != etag } ?? false
                })
            let stale = try await client.request(
                .PUT, "Documents/Caf%C3%A9%20list.txt", headers: [("If-Match", etag)], body: Data("milk, eggs, tea".utf8))
            #expect(stale.status == 204)
            let inspector = try await DocumentCommandLineTests.inspector(server, app)
            let item = try #require(
                try await inspector.changes(since: nil).items.first { $0.name == "Café list.txt" })
            let contents = ([item.current] + item.conflicts).compactMap { $0?.content.size }
            #expect(item.conflicts.count == 1 && Set(contents) == [17, 15], "\(item)")

            let missingBase = try await client.request(
                .PUT, "Documents/Caf%C3%A9%20list.txt", headers: [("If-Match", "\"0000\"")], body: Data("x".utf8))
            #expect(missingBase.status == 412 && missingBase.errorCode == .preconditionFailed)
        }
    }

    /// rclone, a WebDAV client people sync with: 1,000 files up, a second sync that finds nothing to do, and
    /// the same files down again, identical, and on a device's folder through `nimbus device run`.
    @Test func rcloneSyncsAThousandFilesBothWays() async throws {
        // The test server's clock stands still, so a session's rate limit never refills: its burst must hold
        // every request of the three syncs (about 3,300; a real one refills at 1,000 a second).
        let server = try await TestServer.start { $0.sessionRateLimit = RateLimit(perSecond: 1000, burst: 10_000) }
        let app = try await server.seedApp()
        let phone = try await DocumentCommandLineTests.devices(["phone"], server: server, app: app)[0]
        let client = try await Self.client(server, app, name: "rclone")
        let (up, down) = (TestServer.temporaryDirectory(), TestServer.temporaryDirectory())
        var generator = SeededGenerator(seed: 31)
        var files: [String: Data] = [:]
        for index in 0..<1000 {
            let name = index == 0 ? "Notes/Été/Café crème.txt" : "Photos/\(index / 100)/IMG_\(index).bin"
            files[name] = generator.bytes(index == 0 ? 12 : 4096)
        }
        for (name, bytes) in files {
            let file = up.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try bytes.write(to: file)
        }
        let rclone = try Self.rclone(client)
        let first = try await rclone(["sync", up.path, "nimbus:Backup", "-v"])
        #expect(first.status == 0, "\(first.stderr.suffix(2000))")
        #expect(first.stderr.components(separatedBy: "Copied (new)").count - 1 == 1000, "\(first.stderr.suffix(2000))")
        let again = try await rclone(["sync", up.path, "nimbus:Backup", "-v"])
        #expect(again.status == 0 && !again.stderr.contains("Copied") && again.stderr.contains("Checks:"), "\(again.stderr)")
        let back = try await rclone(["sync", "nimbus:Backup", down.path, "-v"])
        #expect(back.status == 0, "\(back.stderr.suffix(2000))")
        for (name, bytes) in files {
            #expect(FileManager.default.contents(atPath: down.appendingPathComponent(name).path) == bytes, "\(name)")
        }

        let daemon = try CommandLineTests.process(phone.run, server: server)
        let written = files
        _ = try await daemon.whileRunning(within: .seconds(30)) { printed in
            let folder = phone.folder.appendingPathComponent("Backup")
            #expect(
                await eventually(timeout: .seconds(120)) {
                    written.allSatisfy {
                        FileManager.default.contents(atPath: folder.appendingPathComponent($0.key).path) == $0.value
                    }
                }, "\(printed.errors.suffix(2000))")
        }
    }

    /// rclone with a remote `nimbus:` for the client, configured in its environment (no file of the user's).
    static func rclone(_ client: Client) throws -> ([String]) async throws -> ChildProcess.Output {
        let configuration = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(at: configuration, withIntermediateDirectories: true)
        let file = configuration.appendingPathComponent("rclone.conf")
        try Data().write(to: file)
        let rclone = URL(fileURLWithPath: "/usr/bin/rclone")
        return { arguments in
            let obscured = try await ChildProcess(executable: rclone, arguments: ["obscure", client.password]).run()
            let environment: [String: String?] = [
                "RCLONE_CONFIG": file.path, "RCLONE_CONFIG_NIMBUS_TYPE": "webdav", "RCLONE_CONFIG_NIMBUS_URL": client.url,
                "RCLONE_CONFIG_NIMBUS_VENDOR": "other", "RCLONE_CONFIG_NIMBUS_USER": client.userName,
                "RCLONE_CONFIG_NIMBUS_PASS": obscured.stdout.trimmingCharacters(in: .whitespacesAndNewlines),
            ]
            return try await ChildProcess(executable: rclone, arguments: arguments, environment: environment).run()
        }
    }

    /// A large file sent with chunked transfer encoding (no length known ahead) streams through the chunker
    /// into the chunks a device would cut from the same bytes, and reads back whole and by range.
    @Test func largeFilesStreamInAndReadByRange() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let client = try await Self.client(server, app)
        var generator = SeededGenerator(seed: 7)
        let bytes = generator.bytes(20 << 20)
        var request = HTTPClientRequest(url: client.url + "Movie%20%C3%A9.bin")
        request.method = .PUT
        request.headers.add(
            name: "Authorization", value: "Basic " + Data("\(client.userName):\(client.password)".utf8).base64EncodedString())
        let pieces = stride(from: 0, to: bytes.count, by: 100_000).map {
            ByteBuffer(bytes: bytes[$0..<min($0 + 100_000, bytes.count)])
        }
        request.body = .stream(
            AsyncStream { continuation in
                for piece in pieces { continuation.yield(piece) }
                continuation.finish()
            }, length: .unknown)
        let put = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        _ = try await put.body.collect(upTo: 1 << 20)
        #expect(put.status.code == 201)

        let whole = try await client.request(.GET, "Movie%20%C3%A9.bin")
        #expect(whole.status == 200 && whole.body == bytes)
        let range = try await client.request(.GET, "Movie%20%C3%A9.bin", headers: [("Range", "bytes=5000000-5999999")])
        #expect(range.status == 206 && range.body == bytes[5_000_000..<6_000_000])
        #expect(range.headers["Content-Range"].first == "bytes 5000000-5999999/\(bytes.count)")
        let beyond = try await client.request(.GET, "Movie%20%C3%A9.bin", headers: [("Range", "bytes=\(bytes.count)-")])
        #expect(beyond.status == 416)

        let inspector = try await DocumentCommandLineTests.inspector(server, app)
        let item = try #require(try await inspector.changes(since: nil).items.first { $0.name == "Movie é.bin" })
        let cut = bytes.withUnsafeBytes { ContentDefinedChunker.standard.chunkLengths(of: $0) }
        #expect(item.current?.content.chunks.map(\.size) == cut.map(Int64.init) && cut.count > 5)
    }

    /// A file larger than what the account has left (its chunks stored and held batch by batch, each batch
    /// while the next arrives) is refused with a 507 and leaves no item and room for what does fit.
    @Test func aFileOverTheQuotaIsRefusedAsItUploads() async throws {
        let server = try await TestServer.start { $0.userQuotaBytes = 12 << 20 }
        let app = try await server.seedApp()
        let client = try await Self.client(server, app)
        var generator = SeededGenerator(seed: 12)
        let put = try await client.request(.PUT, "Too%20big.bin", body: generator.bytes(30 << 20))
        #expect(put.status == 507 && put.errorCode == .quotaExceeded)
        #expect(try await client.request(.GET, "Too%20big.bin").status == 404)
        let small = generator.bytes(1000)
        #expect(try await client.request(.PUT, "Small.txt", body: small).status == 201)
        #expect(try await client.request(.GET, "Small.txt").body == small)
        let inspector = try await DocumentCommandLineTests.inspector(server, app)
        #expect(try await inspector.changes(since: nil).items.map(\.name) == ["Small.txt"])
    }

    /// Finder's own files (`._name`, `.DS_Store`) are kept out of sync: readable, lockable and deletable at
    /// their paths as Finder expects, but never items, so no device and no listing sees them; an app password
    /// made to keep them stores them as documents.
    @Test func finderFilesStayOutOfSyncUnlessKept() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let client = try await Self.client(server, app, name: "Finder")
        let attributes = Data("Mac OS X        ATTR".utf8)
        #expect(try await client.request(.PUT, "Report.txt", body: Data("report".utf8)).status == 201)
        #expect(try await client.request(.PUT, "._Report.txt", body: attributes).status == 201)
        #expect(try await client.request(.PUT, ".DS_Store", body: Data(repeating: 7, count: 6148)).status == 201)
        #expect(try await client.request(.GET, "._Report.txt").body == attributes)
        #expect(try await client.request(.RAW(value: "PROPFIND"), ".DS_Store", headers: [("Depth", "0")]).status == 207)
        let lockInfo = Data(
            #"<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"#
                .utf8)
        let lock = try await client.request(.RAW(value: "LOCK"), "._New.txt", headers: [("Depth", "0")], body: lockInfo)
        let token = try #require(lock.headers["Lock-Token"].first)
        #expect(lock.status == 201)
        #expect(try await client.request(.PUT, "._New.txt", body: Data("x".utf8)).status == 423)
        #expect(try await client.request(.PUT, "._New.txt", headers: [("If", "(\(token))")], body: Data("x".utf8)).status == 204)
        #expect(try await client.request(.RAW(value: "UNLOCK"), "._New.txt", headers: [("Lock-Token", token)]).status == 204)

        let listing = String(
            decoding: try await client.request(.RAW(value: "PROPFIND"), "", headers: [("Depth", "1")]).body, as: UTF8.self)
        #expect(listing.contains("Report.txt") && !listing.contains("._") && !listing.contains(".DS_Store"), "\(listing)")
        let inspector = try await DocumentCommandLineTests.inspector(server, app)
        #expect(try await inspector.changes(since: nil).items.map(\.name) == ["Report.txt"])
        let move = try await client.request(
            .MOVE, "._New.txt", headers: [("Destination", "/dav/\(app.container)/New.txt")])
        #expect(move.status == 403)
        #expect(try await client.request(.DELETE, "._Report.txt").status == 204)
        #expect(try await client.request(.GET, "._Report.txt").status == 404)

        let keeping = try await Self.client(server, app, name: "Finder, keeping its files", keepFinderFiles: true)
        #expect(try await keeping.request(.PUT, "._Kept.txt", body: attributes).status == 201)
        #expect(Set(try await inspector.changes(since: nil).items.map(\.name)) == ["Report.txt", "._Kept.txt"])
    }

    /// A COPY over an existing file that the account's quota refuses leaves the destination as it was: what it
    /// held and what replaces it go in one commit.
    @Test func aRefusedCopyLeavesItsDestinationInPlace() async throws {
        let server = try await TestServer.start { $0.userQuotaBytes = 10_000 }
        let app = try await server.seedApp()
        let client = try await Self.client(server, app)
        var generator = SeededGenerator(seed: 11)
        let (big, small) = (generator.bytes(6000), generator.bytes(3000))
        #expect(try await client.request(.PUT, "big.bin", body: big).status == 201)
        #expect(try await client.request(.PUT, "small.bin", body: small).status == 201)
        let copy = try await client.request(.COPY, "big.bin", headers: [("Destination", "/dav/\(app.container)/small.bin")])
        #expect(copy.status == 507 && copy.errorCode == .quotaExceeded)
        #expect(try await client.request(.GET, "small.bin").body == small)
    }
}
