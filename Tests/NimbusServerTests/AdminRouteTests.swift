import Foundation
import NIOHTTP1
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

@Suite(.cleansUp) struct AdminRouteTests {
    @Test func anAdministratorSetsUpAnAppThatCanUseTheKeyValueStore() async throws {
        let server = try await TestServer.start()
        let admin = try await server.signInAdministrator()

        let team = try await server.request(.POST, "/admin/1/teams", session: admin, json: #"{"name":"Example"}"#).decode(
            Team.self)
        #expect(team.teamID.count == 10)
        let app = try await server.request(
            .POST, "/admin/1/apps", session: admin, json: #"{"bundleID":"com.example.Cloudy","teamID":"\#(team.teamID)"}"#
        ).decode(App.self)
        #expect(app.keyValueStoreIdentifier == "\(team.teamID).com.example.Cloudy")
        #expect(
            try await server.request(
                .POST, "/admin/1/containers", session: admin,
                json: #"{"identifier":"iCloud.com.example.Cloudy","teamID":"\#(team.teamID)"}"#
            ).status == 200)

        let unentitled = try await server.request(
            .POST, "/admin/1/tokens", session: admin,
            json: #"{"container":"iCloud.com.example.Cloudy","bundleID":"com.example.Cloudy"}"#)
        #expect(unentitled.errorCode == .badRequest)

        let entitled = try await server.request(
            .POST, "/admin/1/apps/com.example.Cloudy/entitlements", session: admin,
            json: #"{"container":"iCloud.com.example.Cloudy"}"#
        ).decode(App.self)
        #expect(entitled.containers == ["iCloud.com.example.Cloudy"])

        let created = try await server.request(
            .POST, "/admin/1/tokens", session: admin,
            json: #"{"container":"iCloud.com.example.Cloudy","bundleID":"com.example.Cloudy"}"#
        ).decode(CreatedAPIToken.self)
        #expect(Secrets.isAPITokenShaped(created.apiToken))

        let listed = try await server.request(.GET, "/admin/1/tokens", session: admin)
        #expect(!String(decoding: listed.body, as: UTF8.self).contains(created.apiToken), "secrets are shown once only")

        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        let values = try await server.request(
            .GET, "/kv/1/\(app.keyValueStoreIdentifier)/values", session: ann, apiToken: created.apiToken)
        #expect(values.status == 200)

        #expect(try await server.request(.DELETE, "/admin/1/tokens/\(created.info.tokenID)", session: admin).status == 204)
        let revoked = try await server.request(
            .GET, "/kv/1/\(app.keyValueStoreIdentifier)/values", session: ann, apiToken: created.apiToken)
        #expect(revoked.errorCode == .authenticationFailed)
    }

    /// CloudKit's allowed origins: a token limited to some web origins refuses pages of any other, while
    /// native apps (which send no Origin) use it as before.
    @Test func aTokenLimitedToOriginsRefusesPagesOfOthers() async throws {
        let server = try await TestServer.start()
        let admin = try await server.signInAdministrator()
        let app = try await server.seedApp()
        let bad = try await server.request(
            .POST, "/admin/1/tokens", session: admin,
            json:
                #"{"container":"\#(app.container)","bundleID":"\#(app.bundleID)","allowedOrigins":["https://app.example.com/path"]}"#
        )
        #expect(bad.errorCode == .badRequest)
        let created = try await server.request(
            .POST, "/admin/1/tokens", session: admin,
            json: #"{"container":"\#(app.container)","bundleID":"\#(app.bundleID)","allowedOrigins":["https://app.example.com"]}"#
        ).decode(CreatedAPIToken.self)
        #expect(created.info.allowedOrigins == ["https://app.example.com"])
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        let path = "/kv/1/\(app.storeIdentifier)/values"
        func status(origin: String?) async throws -> RawResponse {
            var headers = [("Authorization", "Bearer \(ann.sessionToken)"), ("X-Nimbus-API-Token", created.apiToken)]
            if let origin { headers.append(("Origin", origin)) }
            return try await server.request(.GET, path, headers: headers)
        }
        #expect(try await status(origin: "https://app.example.com").status == 200)
        #expect(try await status(origin: nil).status == 200, "a native app sends no Origin")
        let other = try await status(origin: "https://evil.example")
        #expect(other.errorCode == .authenticationFailed)
        #expect(other.error?.reason.contains("https://evil.example") == true)
        #expect(try await status(origin: "https://evil.example").status == 401, "the cached credentials are checked again")
    }

    @Test func usersAreNotAdministrators() async throws {
        let server = try await TestServer.start()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        for (method, path) in [(HTTPMethod.GET, "/admin/1/users"), (.POST, "/admin/1/teams"), (.GET, "/admin/1/tokens")] {
            let response = try await server.request(method, path, session: ann, json: #"{"name":"Mine now"}"#)
            #expect(response.status == 403)
            #expect(response.errorCode == .accessDenied)
        }
        #expect(try await server.request(.GET, "/admin/1/users").errorCode == .authenticationRequired)
        #expect(try await server.store.teams().isEmpty)
    }

    @Test(arguments: [
        ("/admin/1/teams", #"{"teamID":"lowercase1","name":"x"}"#),
        ("/admin/1/apps", #"{"bundleID":"no dots","teamID":"98Z3R5XU29"}"#),
        ("/admin/1/containers", #"{"identifier":"com.example.NoPrefix","teamID":"98Z3R5XU29"}"#),
        ("/admin/1/apps", #"{"bundleID":"com.example.x","teamID":"98Z3R5XU29","keyValueStoreIdentifier":"../../etc"}"#),
    ])
    func invalidIdentifiersAreBadRequests(_ path: String, _ body: String) async throws {
        let server = try await TestServer.start()
        let admin = try await server.signInAdministrator()
        try await server.store.createTeam(Team(teamID: "98Z3R5XU29", name: "T"))
        let response = try await server.request(.POST, path, session: admin, json: body)
        #expect(response.status == 400)
        #expect(response.errorCode == .badRequest)
    }

    @Test func referencesToMissingThingsAreNotFound() async throws {
        let server = try await TestServer.start()
        let admin = try await server.signInAdministrator()
        let app = try await server.request(
            .POST, "/admin/1/apps", session: admin, json: #"{"bundleID":"com.example.x","teamID":"98Z3R5XU29"}"#)
        #expect(app.status == 404)
        #expect(app.errorCode == .notFound)
        let entitle = try await server.request(
            .POST, "/admin/1/apps/com.example.none/entitlements", session: admin, json: #"{"container":"iCloud.com.example.x"}"#)
        #expect(entitle.errorCode == .notFound)
        let seeded = try await server.seedApp()
        let unknownContainer = try await server.request(
            .POST, "/admin/1/apps/\(seeded.bundleID)/entitlements", session: admin,
            json: #"{"container":"iCloud.com.example.Unknown"}"#)
        #expect(unknownContainer.status == 404)
        #expect(unknownContainer.error?.reason.contains("iCloud.com.example.Unknown") == true)
        let tokenForUnknown = try await server.request(
            .POST, "/admin/1/tokens", session: admin,
            json: #"{"container":"iCloud.com.example.Unknown","bundleID":"\#(seeded.bundleID)"}"#)
        #expect(tokenForUnknown.errorCode == .badRequest)
        #expect(try await server.store.apiTokens().count == 1)
    }

    @Test func theFirstAdministratorIsCreatedOnce() async throws {
        let server = try await TestServer.start()
        let credentials = try #require(try await server.server.ensureAdministrator())
        #expect(try await server.server.ensureAdministrator() == nil)
        let session = try await NimbusAccount.signIn(
            server: server.url, email: credentials.email, password: credentials.password, deviceName: "console")
        #expect(try await server.request(.GET, "/admin/1/users", session: session).status == 200)
    }
}
