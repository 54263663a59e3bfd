import AsyncHTTPClient
import Foundation
import NIOCore
import NimbusCore
import NimbusTesting
import Synchronization
import Testing

@testable import NimbusServer
@testable import NimbusStore

/// The dashboard's guarantees below the browser: how its session cookie is set, that every page carries a
/// policy without inline code, that forms need the session's token and this server's origin, and that
/// its live stream neither leaks nor holds a shutdown back.
@Suite(.cleansUp) struct DashboardRouteTests {
    struct SignedIn {
        var cookie: String
        var csrf: String
    }

    func signIn(_ server: TestServer, email: String = "root@nimbus.test") async throws -> SignedIn {
        _ = try await server.signInAdministrator()
        let answer = try await server.request(
            .POST, "/dashboard/signin",
            headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Data("email=\(email.replacingOccurrences(of: "@", with: "%40"))&password=correct+horse+battery".utf8))
        #expect(answer.status == 303)
        let cookies = answer.headers["set-cookie"]
        let session = try #require(cookies.first { $0.hasPrefix("nimbus_dashboard=") })
        #expect(session.contains("HttpOnly") && session.contains("SameSite=Strict") && session.contains("Path=/dashboard"))
        #expect(!session.contains("Secure"), "plain HTTP on loopback: a Secure cookie would never come back")
        let value = String(session.split(separator: ";")[0])
        let page = try await server.request(.GET, "/dashboard/users", headers: [("Cookie", value)])
        let html = String(decoding: page.body, as: UTF8.self)
        let csrf = try #require(html.firstRange(of: #"name="csrf" value=""#).map { html[$0.upperBound...].prefix(64) })
        return SignedIn(cookie: value, csrf: String(csrf))
    }

    @Test func pagesCarryAPolicyWithoutInlineCodeAndNeedASession() async throws {
        let server = try await TestServer.start()
        let signedIn = try await signIn(server)
        let page = try await server.request(.GET, "/dashboard", headers: [("Cookie", signedIn.cookie)])
        #expect(page.status == 200)
        let policy = try #require(page.headers["content-security-policy"].first)
        #expect(policy.contains("script-src 'self'") && policy.contains("style-src 'self'") && !policy.contains("unsafe-inline"))
        #expect(page.headers["x-frame-options"].first == "DENY")
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(!html.contains("<script>") && !html.contains("style="), "no inline script or style")
        // Without a session: sent to sign in; a bearer token (the API's credential) opens nothing here.
        let anonymous = try await server.request(.GET, "/dashboard/users")
        #expect(anonymous.status == 303 && anonymous.headers["location"].first?.hasPrefix("/dashboard/signin?next=") == true)
        let admin = try await server.signInAdministrator()
        let bearer = try await server.request(.GET, "/dashboard/users", session: admin)
        #expect(bearer.status == 303, "the dashboard authenticates by its cookie only")
    }

    @Test func formsNeedTheSessionsTokenAndThisOrigin() async throws {
        let server = try await TestServer.start()
        let signedIn = try await signIn(server)
        func post(_ body: String, origin: String? = nil) async throws -> RawResponse {
            var headers = [("Cookie", signedIn.cookie), ("Content-Type", "application/x-www-form-urlencoded")]
            if let origin { headers.append(("Origin", origin)) }
            return try await server.request(.POST, "/dashboard/teams", headers: headers, body: Data(body.utf8))
        }
        #expect(try await post("name=Forged").status == 403, "no token")
        #expect(try await post("name=Forged&csrf=\(String(repeating: "0", count: 64))").status == 403, "a wrong token")
        #expect(try await post("name=Forged&csrf=\(signedIn.csrf)", origin: "https://evil.example").status == 403)
        #expect(try await post("name=Forged&csrf=\(signedIn.csrf)", origin: "null").status == 403)
        #expect(try await server.store.teams().isEmpty, "no refused form changed anything")
        let accepted = try await post("name=Real&csrf=\(signedIn.csrf)", origin: server.url.absoluteString)
        #expect(accepted.status == 303)
        #expect(try await server.store.teams().map(\.name) == ["Real"])
    }

    /// Signing a device out from the users page closes its open push socket at once, saying why; the
    /// account's other device keeps its socket and hears the next change.
    @Test func signingADeviceOutClosesItsPushSocket() async throws {
        let server = try await TestServer.start()
        let signedIn = try await signIn(server)
        let app = try await server.seedApp()
        let phone = try await server.signIn(email: "ann@example.com", device: "phone")
        let laptop = try await server.signIn(email: "ann@example.com", device: "laptop")
        let (phoneSocket, laptopSocket) = (
            PushTests.Device(server: server, session: phone), PushTests.Device(server: server, session: laptop)
        )
        #expect(await eventually { phoneSocket.isConnected && laptopSocket.isConnected })
        let revoke = try await server.request(
            .POST, "/dashboard/users/\(phone.userRecordName)/devices/\(phone.deviceID)/revoke",
            headers: [("Cookie", signedIn.cookie), ("Content-Type", "application/x-www-form-urlencoded")],
            body: Data("csrf=\(signedIn.csrf)".utf8))
        #expect(revoke.status == 303)
        let closed = Mutex<(ended: Bool, saidWhy: Bool)>((false, false))
        Task {
            let frame = try? await phoneSocket.task.value
            closed.withLock { $0 = (true, frame?.closeCode == .policyViolation && frame?.reason == "signed out") }
        }
        #expect(await eventually { closed.withLock { $0.ended } }, "the phone's socket is closed")
        #expect(closed.withLock { $0.saidWhy }, "with the reason")
        try await PushTests.set("after", on: server, app: app, as: laptop)
        #expect(await eventually { laptopSocket.received.count == 1 }, "the laptop still hears its account's changes")
        #expect(server.server.pushConnectionCount == 1)
    }

    /// A record's page lists its versions newest first: who saved each, from which device, which fields
    /// changed, and never a value. Deleting the record forgets its history.
    @Test func aRecordPageShowsItsHistory() async throws {
        let fixture = try await DatabaseFixture.make()
        let server = fixture.server
        let signedIn = try await signIn(server)
        let laptop = try await server.signIn(email: "ann@example.com", device: "laptop")
        let created = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"Notes","fields":{"title":{"value":"Groceries"},"body":{"value":"milk and secret-word"}}}}]}"#
        )
        let firstTag = try #require(created.first?.record?.recordChangeTag)
        let updated = try await fixture.modify(
            #"{"operations":[{"operationType":"update","record":{"recordName":"n1","recordType":"Notes","recordChangeTag":"\#(firstTag)","fields":{"title":{"value":"Shopping"},"body":null}}}]}"#,
            session: laptop)
        let secondTag = try #require(updated.first?.record?.recordChangeTag)
        let path =
            "/dashboard/containers/\(fixture.app.container)/records/n1?env=development&db=private&user=\(fixture.ann.userRecordName)&zone=_defaultZone"
        func history() async throws -> String {
            let page = try await server.request(.GET, path, headers: [("Cookie", signedIn.cookie)])
            #expect(page.status == 200)
            let html = String(decoding: page.body, as: UTF8.self)
            return String(
                try #require(html.firstRange(of: #"<section class="card" id="history">"#).map { html[$0.lowerBound...] }))
        }
        let shown = try await history()
        let rows = shown.components(separatedBy: "<tr").dropFirst(2)  // the head's row, then one per version
        #expect(rows.count == 2)
        let (newest, oldest) = (rows.first ?? "", rows.last ?? "")
        #expect(newest.contains("<code>\(secondTag)</code>") && newest.contains("(this version)") && newest.contains("laptop"))
        #expect(newest.contains("Changed body, title") && newest.contains("ann@example.com"))
        #expect(
            oldest.contains("<code>\(firstTag)</code>") && oldest.contains("phone") && oldest.contains("Created with body, title")
        )
        #expect(!oldest.contains("(this version)"))
        let page = try await server.request(.GET, path, headers: [("Cookie", signedIn.cookie)])
        #expect(!String(decoding: page.body, as: UTF8.self).contains("secret-word"), "a value taken out of the record is gone")

        _ = try await fixture.modify(#"{"operations":[{"operationType":"forceDelete","record":{"recordName":"n1"}}]}"#)
        _ = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"Notes","fields":{"title":{"value":"Anew"}}}}]}"#
        )
        let again = try await history()
        #expect(again.components(separatedBy: "<tr").count == 1 + 2, "one version: the new record's")
        #expect(again.contains("Created with title"))
        #expect(!again.contains("<code>\(firstTag)</code>") && !again.contains("<code>\(secondTag)</code>"))
    }

    /// A backfill under way (here, one a stop cut off halfway) shows on the schema page and in what the
    /// page's script polls, with how far it has come.
    @Test func aBackfillShowsItsProgress() async throws {
        let server = try await TestServer.start()
        let signedIn = try await signIn(server)
        let app = try await server.seedApp()
        let sqlite = try #require(server.store as? SQLiteStore)
        let zone = ZoneKey(
            accountID: RecordDatabase.publicOwner,
            address: ZoneAddress(
                service: .records(container: app.container, environment: "development", database: "public"), name: "_defaultZone")
        )
        _ = try await server.store.transact(zone, creating: true) { transaction in
            for number in 0..<100 { try transaction.put("r\(number)", payload: Data("x".utf8), size: 1) }
        }
        let zoneID = try #require(try await server.store.zoneState(zone)).id
        try await sqlite.pool.write { db in
            try db.execute(
                sql:
                    "INSERT INTO index_backfills (container, environment, kind, zone_id, sequence) VALUES (?, 'development', 'Items', ?, 25)",
                arguments: [app.container, zoneID])
        }
        let path = "/dashboard/containers/\(app.container)/schema"
        let polled = try await server.request(.GET, path + "/backfills", headers: [("Cookie", signedIn.cookie)])
        #expect(polled.status == 200 && polled.headers["content-type"].first == "application/json")
        let answer = try JSONDecoder().decode([String: [BackfillModel]].self, from: polled.body)
        #expect(answer["backfills"]?.map(\.kind) == ["Items"] && answer["backfills"]?.first?.percent == 25)
        let page = String(
            decoding: try await server.request(.GET, path, headers: [("Cookie", signedIn.cookie)]).body, as: UTF8.self)
        #expect(page.contains("Indexing the Items records already saved (development): about 25%"))
        #expect(try await server.request(.GET, path + "/backfills").status == 303, "signed in only")
    }

    @Test func theLiveStreamShowsChangesAndEndsWithTheServer() async throws {
        let server = try await TestServer.start()
        let signedIn = try await signIn(server)
        var request = HTTPClientRequest(url: server.url.absoluteString + "/dashboard/activity/events")
        request.headers.add(name: "Cookie", value: signedIn.cookie)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(response.headers["content-type"].first == "text/event-stream")
        // Read in the background, so the test's deadlines measure the server, not how long the body stays open.
        let stream = Mutex((text: "", ended: false))
        let reader = Task {
            for try await chunk in response.body { stream.withLock { $0.text += String(buffer: chunk) } }
            stream.withLock { $0.ended = true }
        }
        #expect(await eventually { stream.withLock { $0.text.contains(": connected") } })
        let app = try await server.seedApp()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        let written = try await server.request(
            .POST, "/kv/1/\(app.storeIdentifier)/modify", session: ann, apiToken: app.apiToken,
            json: #"{"operations":[{"operationType":"set","key":"k","value":{"type":"STRING","value":"v"}}]}"#)
        #expect(written.status == 200)
        // Signing up and in are changes too. Events name the route's template, never the path.
        let write = #""route":"\/kv\/1\/{store}\/modify""#
        #expect(await eventually { stream.withLock { $0.text.contains(write) } }, "\(stream.withLock { $0.text })")
        #expect(stream.withLock { $0.text.contains(#""kind":"change""#) && !$0.text.contains(app.storeIdentifier) })
        // A graceful stop ends the open stream rather than waiting on it for ever.
        let stopping = Task { await server.stop() }
        let ended = await eventually(timeout: .seconds(30)) { stream.withLock { $0.ended } }
        #expect(ended, "a graceful stop did not end the open stream")
        reader.cancel()
        if ended { await stopping.value }
    }
}
