import AsyncHTTPClient
import Foundation
import NIOCore
import NimbusCore
import NimbusTesting
import Testing

@testable import NimbusServer

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

    @Test(.timeLimit(.minutes(1)))
    func theLiveStreamShowsChangesAndEndsWithTheServer() async throws {
        let server = try await TestServer.start()
        let signedIn = try await signIn(server)
        var request = HTTPClientRequest(url: server.url.absoluteString + "/dashboard/activity/events")
        request.headers.add(name: "Cookie", value: signedIn.cookie)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(response.headers["content-type"].first == "text/event-stream")
        var received = ""
        var chunks = response.body.makeAsyncIterator()
        while !received.contains(": connected"), let chunk = try await chunks.next() { received += String(buffer: chunk) }
        let app = try await server.seedApp()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        let write = try await server.request(
            .POST, "/kv/1/\(app.storeIdentifier)/modify", session: ann, apiToken: app.apiToken,
            json: #"{"operations":[{"operationType":"set","key":"k","value":{"type":"STRING","value":"v"}}]}"#)
        #expect(write.status == 200)
        // Signing up and in are changes too; the write is the last. Events name the route's template.
        while !received.contains("{store}"), let chunk = try await chunks.next() { received += String(buffer: chunk) }
        #expect(received.contains(#"kv\/1\/{store}\/modify","#) && received.contains(#""kind":"change""#), "\(received)")
        #expect(!received.contains(app.storeIdentifier), "events name routes, never paths")
        // A graceful stop ends the open stream rather than waiting on it.
        await server.stop()
        while try await chunks.next() != nil {}
    }
}
