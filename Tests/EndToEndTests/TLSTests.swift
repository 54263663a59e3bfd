import AsyncHTTPClient
import Foundation
import Logging
import NIOHTTP1
import NIOSSL
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusStore
import NimbusTesting
import NimbusTestingCore
import Synchronization
import Testing

/// HTTPS served by `nimbus serve` itself: the SDK and the CLI over it, certificates checked by default,
/// and certificates replaced while devices stay connected.
@Suite(.cleansUp) struct TLSTests {
    static func secureServer(_ certificates: TestCertificates, configure: (inout ServerConfiguration) -> Void = { _ in })
        async throws -> TestServer
    {
        try await TestServer.start(trust: .certificateAuthority(pemFile: certificates.authority)) {
            $0.tls = certificates.files
            configure(&$0)
        }
    }

    /// Two devices' key-value stores, synced and with their push sockets up.
    static func twoConnectedDevices(_ server: TestServer) async throws -> (
        TestServer.SeededApp, UbiquitousKeyValueStore, UbiquitousKeyValueStore
    ) {
        let app = try await server.seedApp()
        let phone = try server.keyValueStore(try await server.signIn(email: "ann@example.com", device: "phone"), app: app)
        let laptop = try server.keyValueStore(try await server.signIn(email: "ann@example.com", device: "laptop"), app: app)
        phone.start()
        laptop.start()
        #expect(await phone.synchronize())
        #expect(await laptop.synchronize())
        #expect(await eventually { phone.isPushConnected && laptop.isPushConnected }, "push sockets connect over wss")
        return (app, phone, laptop)
    }

    @Test(arguments: TestCertificates.KeyKind.allCases) func devicesSyncOverHTTPSAndPushOverWSS(_ key: TestCertificates.KeyKind)
        async throws
    {
        let certificates = try TestCertificates.make(in: TestServer.temporaryDirectory(), key: key)
        let server = try await Self.secureServer(certificates)
        #expect(server.url.scheme == "https")
        let (app, phone, laptop) = try await Self.twoConnectedDevices(server)
        phone.set("over TLS", forKey: "bookmark")
        #expect(await eventually { laptop.string(forKey: "bookmark") == "over TLS" }, "the change arrives by push")
        phone.close()
        laptop.close()

        // Absolute URLs the server hands out (asset uploads) are https too.
        let session = try await server.signIn(email: "ann@example.com", device: "camera")
        let database = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        let file = TestServer.temporaryDirectory()
        try Data(repeating: 7, count: 5000).write(to: file)
        var photo = Record(recordType: "Photos")
        photo["image"] = Asset(fileURL: file)
        photo = try await database.save(photo)
        let asset = try #require(photo["image"] as Asset?)
        #expect(try await database.download(asset) == Data(repeating: 7, count: 5000))
    }

    @Test func http2IsServedToClientsThatOfferIt() async throws {
        let certificates = try TestCertificates.make(in: TestServer.temporaryDirectory())
        let server = try await Self.secureServer(certificates)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(certificates.authority.path)]
        for (offered, expected) in [(HTTPClient.Configuration.HTTPVersion.automatic, HTTPVersion.http2), (.http1Only, .http1_1)] {
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.httpVersion = offered
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let response = try await client.execute(
                HTTPClientRequest(url: server.url.absoluteString + "/health"), timeout: .seconds(10))
            _ = try await response.body.collect(upTo: 1 << 16)
            #expect(response.version == expected)
            #expect(response.status == .ok)
            try await client.shutdown()
        }
        // The SDK offers HTTP/2: many saves at once share one connection, each answered on its stream.
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let database = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        let saved = try await withThrowingTaskGroup(of: Record.self) { group in
            for number in 0..<64 {
                group.addTask {
                    var note = Record(recordType: "Notes")
                    note["number"] = number
                    return try await database.save(note)
                }
            }
            return try await group.reduce(into: [Record]()) { $0.append($1) }
        }
        #expect(Set(saved.compactMap { $0["number"] as Int64? }) == Set(0..<64))
    }

    @Test func http2ConnectionsCountAgainstTheirAddresssLimit() async throws {
        let certificates = try TestCertificates.make(in: TestServer.temporaryDirectory())
        let server = try await Self.secureServer(certificates) { $0.maxConnectionsPerAddress = 1 }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(certificates.authority.path)]
        let health = HTTPClientRequest(url: server.url.absoluteString + "/health")
        let first = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        let answer = try await first.execute(health, timeout: .seconds(10))
        #expect(answer.version == .http2)
        _ = try await answer.body.collect(upTo: 1 << 16)
        // The first client keeps its connection open: a second from the same address is refused.
        var once = HTTPClient.Configuration(tlsConfiguration: tls)
        once.connectionPool.retryConnectionEstablishment = false
        let second = HTTPClient(eventLoopGroupProvider: .singleton, configuration: once)
        await #expect(throws: (any Error).self) { _ = try await second.execute(health, timeout: .seconds(10)) }
        try await first.shutdown()
        #expect(await eventually { (try? await second.execute(health, timeout: .seconds(10)))?.status == .ok })
        try await second.shutdown()
    }

    @Test func aConnectionThatNeverFinishesItsHandshakeIsClosed() async throws {
        let certificates = try TestCertificates.make(in: TestServer.temporaryDirectory())
        let server = try await Self.secureServer(certificates) { $0.requestHeadTimeout = .milliseconds(300) }
        let exchange = try await server.rawExchange(Data("\u{16}\u{03}\u{01}".utf8), timeout: .seconds(10))
        #expect(exchange.closedByServer, "a client that stops mid-handshake is cut off at the head timeout")
    }

    @Test func clientsCheckTheCertificateByDefault() async throws {
        let certificates = try TestCertificates.make(in: TestServer.temporaryDirectory())
        let server = try await Self.secureServer(certificates)
        // The system does not trust the test authority, and another authority does not vouch for this server.
        let other = try TestCertificates.make(in: TestServer.temporaryDirectory(), name: "Another")
        for trust in [ServerTrust.system, .certificateAuthority(pemFile: other.authority)] {
            do {
                try await NimbusAccount.signUp(
                    server: server.url, email: "eve@example.com", password: TestServer.password, trust: trust)
                Issue.record("a certificate the client does not trust was accepted")
            } catch let error as NimbusError {
                #expect(error.code == .networkUnavailable)
                #expect(
                    error.reason.contains("CERTIFICATE_VERIFY_FAILED") || error.reason.lowercased().contains("certificate"),
                    "\(error.reason)")
            }
        }
        #expect(try await server.store.account(email: "eve@example.com") == nil, "nothing was sent")
        // Only the option meant for tests skips the check.
        try await NimbusAccount.signUp(
            server: server.url, email: "eve@example.com", password: TestServer.password, trust: .insecureForTestingOnly)
        try await NimbusAccount.signUp(
            server: server.url, email: "ann@example.com", password: TestServer.password,
            trust: .certificateAuthority(pemFile: certificates.authority))
    }

    /// A certificate from a trusted authority for another name is refused: the name is checked too.
    @Test func aCertificateForAnotherNameIsRefused() async throws {
        let certificates = try TestCertificates.make(in: TestServer.temporaryDirectory(), names: ["cloud.example.com"])
        let server = try await Self.secureServer(certificates)
        await #expect(throws: NimbusError.self) {
            try await NimbusAccount.signUp(
                server: server.url, email: "ann@example.com", password: TestServer.password,
                trust: .certificateAuthority(pemFile: certificates.authority))
        }
        #expect(try await server.store.account(email: "ann@example.com") == nil)
    }

    @Test func aRenewedCertificateIsServedWithoutDroppingConnections() async throws {
        let directory = TestServer.temporaryDirectory()
        let first = try TestCertificates.make(in: directory.appendingPathComponent("first"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let served = TestCertificates(
            authority: first.authority, chain: directory.appendingPathComponent("chain.pem"),
            key: directory.appendingPathComponent("key.pem"))
        try FileManager.default.copyItem(at: first.chain, to: served.chain)
        try FileManager.default.copyItem(at: first.key, to: served.key)
        let server = try await Self.secureServer(served) { $0.certificateCheckInterval = .milliseconds(50) }
        let (_, phone, laptop) = try await Self.twoConnectedDevices(server)

        // A renewal from another authority replaces both files.
        let second = try TestCertificates.make(in: directory.appendingPathComponent("second"), key: .rsa, name: "Renewed")
        try Self.replace(served.key, with: second.key)
        try Self.replace(served.chain, with: second.chain)
        let renewed = await eventually {
            (try? await NimbusAccount.signUp(
                server: server.url, email: "new@example.com", password: TestServer.password,
                trust: .certificateAuthority(pemFile: second.authority))) != nil
        }
        #expect(renewed, "new connections get the new certificate")
        // A client trusting only the old authority (a new one: the phone's pooled connections would be reused).
        let oldAuthority = directory.appendingPathComponent("old-ca.pem")
        try FileManager.default.copyItem(at: first.authority, to: oldAuthority)
        await #expect(throws: NimbusError.self) {
            try await NimbusAccount.signUp(
                server: server.url, email: "late@example.com", password: TestServer.password,
                trust: .certificateAuthority(pemFile: oldAuthority))
        }
        // The push sockets opened under the old certificate are still up and still deliver.
        #expect(phone.isPushConnected && laptop.isPushConnected)
        phone.set("after the renewal", forKey: "bookmark")
        #expect(await eventually { laptop.string(forKey: "bookmark") == "after the renewal" })

        // A broken renewal (a key that is not the certificate's) is refused; the served pair stays.
        let third = try TestCertificates.make(in: directory.appendingPathComponent("third"))
        try Self.replace(served.key, with: third.key)
        let log = LogCapture()
        #expect(server.server.certificates?.reload(force: true, logger: log.logger) == false)
        #expect(
            log.messages.contains {
                $0.contains("kept the previous TLS certificate") && $0.contains("is not the one of the certificate")
            })
        try await NimbusAccount.signUp(
            server: server.url, email: "still@example.com", password: TestServer.password,
            trust: .certificateAuthority(pemFile: second.authority))
        phone.close()
        laptop.close()
    }

    /// Replaces `file` the way renewal tools do: a new file renamed over the old.
    static func replace(_ file: URL, with source: URL) throws {
        let temporary = file.appendingPathExtension("new")
        try? FileManager.default.removeItem(at: temporary)
        try FileManager.default.copyItem(at: source, to: temporary)
        guard rename(temporary.path, file.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    @Test func filesThatCannotBeServedAreRefusedAtStart() async throws {
        let directory = TestServer.temporaryDirectory()
        let good = try TestCertificates.make(in: directory.appendingPathComponent("good"))
        let other = try TestCertificates.make(in: directory.appendingPathComponent("other"))
        let garbage = directory.appendingPathComponent("garbage.pem")
        try Data("not a certificate".utf8).write(to: garbage)
        let cases: [(ServerCertificates.Files, String)] = [
            (.init(certificateChain: garbage, privateKey: good.key), "holds no PEM certificate chain"),
            (.init(certificateChain: good.chain, privateKey: garbage), "holds no unencrypted PEM private key"),
            (.init(certificateChain: good.chain, privateKey: other.key), "is not the one of the certificate"),
            (.init(certificateChain: directory.appendingPathComponent("missing.pem"), privateKey: good.key), "holds no PEM"),
        ]
        for (files, expected) in cases {
            var configuration = ServerConfiguration()
            configuration.dataDirectory = TestServer.temporaryDirectory()
            configuration.tls = files
            let error = try await #require(throws: CertificateError.self) { try await NimbusServer(configuration: configuration) }
            #expect(error.description.contains(expected), "\(error)")
        }
    }

    @Test func plainHTTPBeyondLoopbackIsWarnedAboutOnce() async throws {
        let certificates = try TestCertificates.make(in: TestServer.temporaryDirectory())
        for (host, tls, warned) in [("0.0.0.0", false, true), ("127.0.0.1", false, false), ("0.0.0.0", true, false)] {
            let log = LogCapture()
            var configuration = ServerConfiguration()
            configuration.dataDirectory = TestServer.temporaryDirectory()
            configuration.host = host
            configuration.tls = tls ? certificates.files : nil
            configuration.bcryptCost = 4
            let logger = log.logger
            _ = try await NimbusServer(configuration: configuration, logger: logger)
            let warnings = log.messages.filter { $0.contains("serving plain HTTP") }
            #expect(warnings.count == (warned ? 1 : 0), "\(host) tls=\(tls): \(log.messages)")
            if warned { #expect(warnings[0].contains("passwords, session tokens")) }
        }
    }

    @Test func theCommandLineChecksCertificatesAndReloadsOnSIGHUP() async throws {
        let directory = TestServer.temporaryDirectory()
        let first = try TestCertificates.make(in: directory.appendingPathComponent("first"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let chain = directory.appendingPathComponent("chain.pem")
        let key = directory.appendingPathComponent("key.pem")
        try FileManager.default.copyItem(at: first.chain, to: chain)
        try FileManager.default.copyItem(at: first.key, to: key)
        let data = directory.appendingPathComponent("data")
        let serve = ChildProcess(
            executable: try CommandLineTests.executable,
            arguments: [
                "serve", "--data", data.path, "--port", "0", "--tls-cert", chain.path, "--tls-key", key.path, "--tls-check-every",
                "0",
            ],
            environment: CommandLineTests.environment(server: nil))
        let ending = try await serve.whileRunning { output in
            #expect(await eventually { output.value.contains("Nimbus is serving https://127.0.0.1:") })
            let port = try #require(output.value.split(separator: "127.0.0.1:").last?.prefix { $0.isNumber })
            let url = "https://localhost:\(port)"
            let config = directory.appendingPathComponent("config").path
            let signup = ["signup", "--server", url, "--email", "ann@example.com", "--password", TestServer.password]
            let untrusted = try await DataCommandLineTests.nimbus(signup)
            #expect(untrusted.status == 1 && untrusted.stderr.contains("NETWORK_UNAVAILABLE"), "\(untrusted.stderr)")
            let trusted = try await DataCommandLineTests.nimbus(signup + ["--ca-file", first.authority.path])
            #expect(trusted.status == 0, "\(trusted.stderr)")
            let insecure = try await DataCommandLineTests.nimbus(
                [
                    "login", "--server", url, "--config", config, "--email", "ann@example.com", "--password", TestServer.password,
                    "--insecure",
                ])
            #expect(insecure.status == 0, "\(insecure.stderr)")
            #expect(insecure.stderr.contains("--insecure: the server's certificate is not checked; use it for tests only"))

            // Renewed files, then SIGHUP: new connections get the new certificate at once.
            let second = try TestCertificates.make(in: directory.appendingPathComponent("second"), name: "Renewed")
            try Self.replace(key, with: second.key)
            try Self.replace(chain, with: second.chain)
            kill(output.processID, SIGHUP)
            let reloaded = await eventually(timeout: .seconds(5)) {
                (try? await DataCommandLineTests.nimbus(
                    [
                        "signup", "--server", url, "--email", "bob@example.com", "--password", TestServer.password, "--ca-file",
                        second.authority.path,
                    ]))?.status == 0
            }
            #expect(reloaded, "SIGHUP reloads the certificate (the files are not looked at otherwise here)")
        }
        #expect(ending == .exited(0))
    }
}
