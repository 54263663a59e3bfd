import Foundation
import NIOCore
import Testing

@testable import NimbusServer

/// The rules WebDAV requests are judged by, one at a time.
struct WebDAVRulesTests {
    /// Passwords travel with every WebDAV request: plain HTTP takes them only from this machine, or when the
    /// operator's public URL says a proxy terminates TLS.
    @Test func passwordsNeedTLSAwayFromThisMachine() throws {
        let remote = try SocketAddress(ipAddress: "192.0.2.7", port: 50_000)
        let remoteV6 = try SocketAddress(ipAddress: "2001:db8::7", port: 50_000)
        let loopback = try SocketAddress(ipAddress: "127.0.0.1", port: 50_000)
        let loopbackV6 = try SocketAddress(ipAddress: "::1", port: 50_000)
        #expect(!DAVRoutes.allowsPasswords(tls: false, publicURL: nil, peer: remote))
        #expect(!DAVRoutes.allowsPasswords(tls: false, publicURL: nil, peer: remoteV6))
        #expect(!DAVRoutes.allowsPasswords(tls: false, publicURL: "http://files.example.com", peer: remote))
        #expect(!DAVRoutes.allowsPasswords(tls: false, publicURL: nil, peer: nil))
        #expect(DAVRoutes.allowsPasswords(tls: true, publicURL: nil, peer: remote))
        #expect(DAVRoutes.allowsPasswords(tls: false, publicURL: "HTTPS://files.example.com", peer: remote))
        #expect(DAVRoutes.allowsPasswords(tls: false, publicURL: nil, peer: loopback))
        #expect(DAVRoutes.allowsPasswords(tls: false, publicURL: nil, peer: loopbackV6))
    }

    /// RFC 4918 §10.4's grammar: untagged and tagged lists, `Not`, tokens and entity tags; anything else is
    /// refused rather than guessed at.
    @Test func ifHeadersParseByTheGrammar() throws {
        let header = try #require(
            DAVIfHeader(#"(<urn:uuid:a> ["x1"]) (Not <DAV:no-lock> ["x2"])"#))
        #expect(header.lists.count == 2)
        #expect(
            header.lists[0].conditions == [.init(negated: false, token: "urn:uuid:a"), .init(negated: false, etag: #""x1""#)])
        #expect(header.lists[1].conditions.first == .init(negated: true, token: "DAV:no-lock"))
        #expect(header.submittedTokens == ["urn:uuid:a"])
        let tagged = try #require(DAVIfHeader("</dav/c/a.txt> (<urn:uuid:b>) </dav/c/b.txt> ([\"y\"])"))
        #expect(tagged.lists.map(\.resource) == ["/dav/c/a.txt", "/dav/c/b.txt"])
        for malformed in ["", "(<urn:uuid:a>", "()", "<urn:x>", "(urn:uuid:a)", "(Not)", "x (<a>)"] {
            #expect(DAVIfHeader(malformed) == nil, "\(malformed)")
        }
    }

    /// A dead property comes back as the client wrote it, whatever prefixes it chose, with every namespace
    /// it uses declared on it.
    @Test func deadPropertiesKeepTheirNamespaces() throws {
        let body = Data(
            #"<a:prop xmlns:a="http://example.com/a" xmlns:b="http://example.com/b"><b:inner b:attr="1 &amp; 2">x &lt; y</b:inner></a:prop>"#
                .utf8)
        let element = try #require(DAVElement.parse(body))
        #expect(element.key == DAVPropertyName(namespace: "http://example.com/a", name: "prop"))
        let again = try #require(DAVElement.parse(Data(element.serialized().utf8)))
        #expect(again == element)
        #expect(DAVElement.parse(Data("<a><b></a>".utf8)) == nil)
    }

    /// A body that declares entities expanding into each other (a billion laughs) does not blow up: entities
    /// are not expanded into the tree.
    @Test func entitiesDoNotExpand() {
        var declarations = #"<!ENTITY a0 "laugh">"#
        for level in 1...9 {
            declarations += "<!ENTITY a\(level) \"" + String(repeating: "&a\(level - 1);", count: 10) + "\">"
        }
        let body = Data(
            "<?xml version=\"1.0\"?><!DOCTYPE p [\(declarations)]><D:propfind xmlns:D=\"DAV:\">&a9;</D:propfind>".utf8)
        let parsed = DAVElement.parse(body)
        #expect((parsed?.text.utf8.count ?? 0) < 1 << 20)
    }

    /// Container folders are named as the device daemon names its folders.
    @Test func containerFoldersNameTheirEnvironment() {
        let development = DAVContainerFolder(name: "iCloud.com.example.Notes")
        #expect(development.identifier == "iCloud.com.example.Notes" && development.environment == "development")
        let production = DAVContainerFolder(name: "iCloud.com.example.Notes (production)")
        #expect(production.identifier == "iCloud.com.example.Notes" && production.environment == "production")
        #expect(production.name == "iCloud.com.example.Notes (production)" && development.name == "iCloud.com.example.Notes")
    }

    /// What a write's commit refuses: a live lock on what it changes whose token the request did not submit, on
    /// the target itself, on its folder when the folder's members change, below it when the change reaches
    /// there; an expired lock guards nothing. Names compare as the document service compares them.
    @Test func writesAreGuardedByTheLocksOnWhatTheyChange() throws {
        func lock(_ path: [String], depthInfinity: Bool = false, expiresAt: Int64 = 2_000) -> DAVLock {
            DAVLock(
                token: "urn:uuid:\(path.joined(separator: "-"))", path: path, depthInfinity: depthInfinity, exclusive: true,
                timeoutSeconds: 60, expiresAt: expiresAt)
        }
        func refuses(_ target: DAVWriteGuard.Target, _ locks: [DAVLock], submitted: Set<String> = []) -> Bool {
            (try? DAVWriteGuard(targets: [target], submitted: submitted, now: { 1_000 }).check(locks)) == nil
        }
        let file = lock(["Reports", "Q3.txt"])
        #expect(refuses(.init(path: ["Reports", "Q3.txt"]), [file]))
        #expect(refuses(.init(path: ["reports", "q3.TXT"]), [file]), "names compare by collision key")
        #expect(!refuses(.init(path: ["Reports", "Q3.txt"]), [file], submitted: [file.token]))
        #expect(!refuses(.init(path: ["Reports", "Q3.txt"]), [lock(["Reports", "Q3.txt"], expiresAt: 1_000)]))
        #expect(!refuses(.init(path: ["Reports", "Q4.txt"]), [file]))

        let folder = lock(["Reports"])
        #expect(!refuses(.init(path: ["Reports", "Q4.txt"]), [folder]), "a depth-0 lock on a folder guards its own state")
        #expect(refuses(.init(path: ["Reports", "Q4.txt"], membership: true), [folder]), "but not its members' names")
        #expect(refuses(.init(path: ["Reports", "2026", "Q4.txt"]), [lock(["Reports"], depthInfinity: true)]))

        #expect(!refuses(.init(path: ["Reports"]), [file]))
        #expect(refuses(.init(path: ["Reports"], subtree: true), [file]), "a folder's deletion reaches its files")
    }
}
