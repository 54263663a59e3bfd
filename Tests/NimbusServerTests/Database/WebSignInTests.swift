import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// The sign-in page behind `AUTHENTICATION_REQUIRED`'s redirectURL, handing web auth tokens back the
/// way CloudKit's does.
@Suite(.cleansUp) struct WebSignInTests {
    static func form(_ fields: [(String, String)]) -> Data {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return Data(
            fields.map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&").utf8)
    }

    @Test func aWebClientSignsInThroughTheRedirectAndUsesTheToken() async throws {
        let server = try await TestServer.start { $0.webSignInOrigins = ["https://app.example.com"] }
        let app = try await server.seedApp()
        _ = try await server.signIn(email: "ann@example.com", device: "phone")
        let query = "/database/1/\(app.container)/development/private/records/query?ckAPIToken=\(app.apiToken)"
        let body = Data(#"{"query":{"recordType":"Items"}}"#.utf8)

        let required = try await server.request(.POST, query, body: body)
        #expect(required.status == 421)
        // Absolute, as a web client resolves it against its own page: the host the request reached.
        let redirect = try #require(required.error?.redirectURL)
        #expect(redirect.hasPrefix("http://127.0.0.1:\(server.port)/auth/1/web/signin?ckAPIToken=\(app.apiToken)"), "\(redirect)")

        let page = try await server.request(
            .GET, String(redirect.dropFirst(server.url.absoluteString.count)) + "&callback=https://app.example.com/done")
        #expect(page.status == 200 && page.headers.first(name: "Content-Type")?.hasPrefix("text/html") == true)
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(html.contains(#"name="callback" value="https://app.example.com/done""#) && html.contains(#"type="password""#))

        let fields = [("ckAPIToken", app.apiToken), ("callback", "https://app.example.com/done"), ("email", "ann@example.com")]
        let headers = [("Content-Type", "application/x-www-form-urlencoded")]
        let wrong = try await server.request(
            .POST, "/auth/1/web/signin", headers: headers, body: Self.form(fields + [("password", "wrong password")]))
        #expect(wrong.status == 401 && String(decoding: wrong.body, as: UTF8.self).contains("role=\"alert\""))
        let signedIn = try await server.request(
            .POST, "/auth/1/web/signin", headers: headers, body: Self.form(fields + [("password", TestServer.password)]))
        #expect(signedIn.status == 303)
        let location = try #require(signedIn.headers.first(name: "Location").flatMap(URLComponents.init(string:)))
        #expect(location.host == "app.example.com" && location.path == "/done")
        let token = try #require(location.queryItems?.first { $0.name == "ckWebAuthToken" }?.value)

        let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        for _ in 0..<2 {  // reusable until it expires, since clients re-send it
            #expect(
                try await server.request(.POST, query + "&ckWebAuthToken=\(encoded)", body: body).status == 400,
                "Items is not a type yet")
        }
        let caller = try await server.request(
            .GET,
            "/database/1/\(app.container)/development/private/users/caller?ckAPIToken=\(app.apiToken)&ckWebAuthToken=\(encoded)")
        #expect(caller.status == 200)

        // Without a callback, the page posts the token to the opening window of a trusted origin.
        let popup = try await server.request(
            .POST, "/auth/1/web/signin", headers: headers,
            body: Self.form([
                ("ckAPIToken", app.apiToken), ("origin", "https://app.example.com"), ("email", "ann@example.com"),
                ("password", TestServer.password),
            ]))
        let script = String(decoding: popup.body, as: UTF8.self)
        #expect(script.contains("postMessage({ckWebAuthToken:") && script.contains(#""https://app.example.com")"#))
    }

    @Test func untrustedOriginsAndUnknownTokensAreRefused() async throws {
        let server = try await TestServer.start { $0.webSignInOrigins = ["https://app.example.com"] }
        let app = try await server.seedApp()
        let evil = try await server.request(
            .GET, "/auth/1/web/signin?ckAPIToken=\(app.apiToken)&callback=https://evil.example.net/steal")
        #expect(evil.errorCode == .badRequest)
        let evilOrigin = try await server.request(
            .GET, "/auth/1/web/signin?ckAPIToken=\(app.apiToken)&origin=https://evil.example.net")
        #expect(evilOrigin.errorCode == .badRequest)
        let unknown = try await server.request(.GET, "/auth/1/web/signin?ckAPIToken=\(String(repeating: "a", count: 64))")
        #expect(unknown.errorCode == .authenticationFailed)
        let huge = try await server.request(
            .POST, "/auth/1/web/signin", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Data(repeating: 65, count: 20000))
        #expect(huge.errorCode == .requestTooLarge)
        let markup = try await server.request(
            .POST, "/auth/1/web/signin", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Self.form([("ckAPIToken", app.apiToken), ("email", "<script>x</script>"), ("password", "wrong password")]))
        #expect(!String(decoding: markup.body, as: UTF8.self).contains("<script>x"), "what the user typed is escaped")
    }

    /// Behind a proxy the configured public address wins over the host the request names.
    @Test func redirectsAndAssetURLsNameTheConfiguredPublicAddress() async throws {
        let server = try await TestServer.start { $0.publicURL = "https://cloud.example.com" }
        do {
            let app = try await server.seedApp()
            let required = try await server.request(
                .POST, "/database/1/\(app.container)/development/private/records/query?ckAPIToken=\(app.apiToken)",
                body: Data(#"{"query":{"recordType":"Items"}}"#.utf8))
            #expect(required.error?.redirectURL == "https://cloud.example.com/auth/1/web/signin?ckAPIToken=\(app.apiToken)")
            let ann = try await server.signIn(email: "ann@example.com", device: "phone")
            let upload = try await server.request(
                .POST, "/database/1/\(app.container)/development/private/assets/upload?ckAPIToken=\(app.apiToken)", session: ann,
                json: #"{"tokens":[{"recordType":"Photos","fieldName":"image"}]}"#)
            #expect(
                try upload.decode(AssetUploadResponse.self).tokens.first?.url.hasPrefix(
                    "https://cloud.example.com/assets/1/upload/") == true)
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }
}
