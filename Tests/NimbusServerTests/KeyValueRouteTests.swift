import Foundation
import NIOHTTP1
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusStore
import NimbusTesting
import Testing

/// The key-value routes over raw HTTP: every auth boundary, every limit, and bad input.
@Suite(.cleansUp) struct KeyValueRouteTests {
    struct Fixture {
        let server: TestServer
        let app: TestServer.SeededApp
        let ann: NimbusSession
        var base: String { "/kv/1/\(app.storeIdentifier)" }

        static func make(configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> Fixture {
            let server = try await TestServer.start(configure: configure)
            let app = try await server.seedApp()
            let ann = try await server.signIn(email: "ann@example.com", device: "phone")
            return Fixture(server: server, app: app, ann: ann)
        }

        func modify(_ json: String, session: NimbusSession? = nil, apiToken: String? = nil) async throws -> RawResponse {
            try await server.request(
                .POST, base + "/modify", session: session ?? ann, apiToken: apiToken ?? app.apiToken, json: json)
        }

        func values(session: NimbusSession? = nil) async throws -> [String: KeyValue] {
            try await server.request(.GET, base + "/values", session: session ?? ann, apiToken: app.apiToken)
                .decode(KeyValueSnapshot.self).values
        }

        func sequence() async throws -> Int64 {
            let zone = ZoneKey(accountID: ann.userRecordName, address: ZoneAddress(service: .keyValue, name: app.storeIdentifier))
            return try await server.store.zoneState(zone)?.sequence ?? 0
        }
    }

    static func set(_ key: String, _ value: String) -> String {
        #"{"operations":[{"operationType":"set","key":"\#(key)","value":{"type":"STRING","value":"\#(value)"}}]}"#
    }

    @Test func setReadAndRemove() async throws {
        let fixture = try await Fixture.make()
        let set = try await fixture.modify(Self.set("greeting", "hello"))
        #expect(set.status == 200)
        #expect(try set.decode(KeyValueModifyResponse.self).sequence == 1)
        #expect(try await fixture.values() == ["greeting": .string("hello")])

        let removed = try await fixture.modify(#"{"operations":[{"operationType":"remove","key":"greeting"}]}"#)
        #expect(removed.status == 200)
        #expect(try await fixture.values().isEmpty)

        let changes = try await fixture.server.request(
            .POST, fixture.base + "/changes", session: fixture.ann, apiToken: fixture.app.apiToken, json: "{}"
        ).decode(KeyValueChangesResponse.self)
        #expect(changes.changes.map(\.deleted) == [true])
        #expect(!changes.moreComing)
    }

    @Test func changesArePagedWithMoreComing() async throws {
        let fixture = try await Fixture.make()
        let operations = (0..<25).map { #"{"operationType":"set","key":"k\#($0)","value":{"type":"INT64","value":\#($0)}}"# }
        #expect(try await fixture.modify(#"{"operations":[\#(operations.joined(separator: ","))]}"#).status == 200)
        var token: String?
        var keys = [String]()
        var pages = 0
        while true {
            let body = token.map { #"{"syncToken":"\#($0)","resultsLimit":10}"# } ?? #"{"resultsLimit":10}"#
            let page = try await fixture.server.request(
                .POST, fixture.base + "/changes", session: fixture.ann, apiToken: fixture.app.apiToken, json: body
            ).decode(KeyValueChangesResponse.self)
            keys += page.changes.map(\.key)
            token = page.syncToken
            pages += 1
            if !page.moreComing { break }
        }
        #expect(pages == 3)
        #expect(Set(keys).count == 25)
        let again = try await fixture.server.request(
            .POST, fixture.base + "/changes", session: fixture.ann, apiToken: fixture.app.apiToken,
            json: #"{"syncToken":"\#(token!)"}"#
        ).decode(KeyValueChangesResponse.self)
        #expect(again.changes.isEmpty)
    }

    // MARK: Auth boundaries

    struct AuthCase: CustomTestStringConvertible, Sendable {
        var name: String
        var status: Int
        var code: ErrorCode
        var testDescription: String { name }
    }

    @Test(arguments: [
        AuthCase(name: "no API token", status: 401, code: .authenticationFailed),
        AuthCase(name: "malformed API token", status: 401, code: .authenticationFailed),
        AuthCase(name: "unknown API token", status: 401, code: .authenticationFailed),
        AuthCase(name: "revoked API token", status: 401, code: .authenticationFailed),
        AuthCase(name: "no session", status: 421, code: .authenticationRequired),
        AuthCase(name: "unknown session", status: 401, code: .authenticationFailed),
        AuthCase(name: "expired session", status: 401, code: .authenticationFailed),
        AuthCase(name: "app lost its entitlement", status: 403, code: .accessDenied),
        AuthCase(name: "another app's store", status: 403, code: .accessDenied),
    ])
    func everyBoundaryRefusesAndChangesNothing(_ authCase: AuthCase) async throws {
        let fixture = try await Fixture.make { $0.sessionLifetime = .seconds(60) }
        var headers = [("Authorization", "Bearer \(fixture.ann.sessionToken)"), ("X-Nimbus-API-Token", fixture.app.apiToken)]
        var path = fixture.base + "/modify"
        switch authCase.name {
        case "no API token": headers.removeLast()
        case "malformed API token": headers[1].1 = "not-a-token"
        case "unknown API token": headers[1].1 = Secrets.apiToken()
        case "revoked API token": try await fixture.server.store.revokeAPIToken(id: fixture.app.tokenID)
        case "no session": headers.removeFirst()
        case "unknown session": headers[0].1 = "Bearer \(Secrets.sessionToken())"
        case "expired session": fixture.server.clock.advance(by: 61)
        case "app lost its entitlement":
            try await fixture.server.store.revokeEntitlement(bundleID: fixture.app.bundleID, container: fixture.app.container)
        case "another app's store":
            let other = try await fixture.server.seedApp(bundleID: "com.example.Other")
            path = "/kv/1/\(other.storeIdentifier)/modify"
        default: Issue.record("unknown case")
        }
        let response = try await fixture.server.request(.POST, path, headers: headers, body: Data(Self.set("k", "v").utf8))
        #expect(response.status == authCase.status)
        #expect(response.errorCode == authCase.code)
        #expect(response.error?.reason.isEmpty == false)
        if authCase.code == .authenticationRequired { #expect(response.error?.redirectURL != nil) }
        #expect(try await fixture.sequence() == 0)
    }

    @Test func credentialsAlsoWorkAsCloudKitQueryParameters() async throws {
        let fixture = try await Fixture.make()
        let token = fixture.ann.sessionToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let response = try await fixture.server.request(
            .GET, fixture.base + "/values?ckAPIToken=\(fixture.app.apiToken)&ckWebAuthToken=\(token)")
        #expect(response.status == 200)
    }

    @Test func oneUserNeverSeesAnothersValues() async throws {
        let fixture = try await Fixture.make()
        #expect(try await fixture.modify(Self.set("diary", "ann's secret")).status == 200)
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        #expect(try await fixture.values(session: bob).isEmpty)
        let changes = try await fixture.server.request(
            .POST, fixture.base + "/changes", session: bob, apiToken: fixture.app.apiToken, json: "{}"
        ).decode(KeyValueChangesResponse.self)
        #expect(changes.changes.isEmpty)
        // Ann's token names Ann's zone: presented by Bob it is not a position in his history.
        let annToken = try await fixture.server.request(
            .POST, fixture.base + "/changes", session: fixture.ann, apiToken: fixture.app.apiToken, json: "{}"
        ).decode(KeyValueChangesResponse.self).syncToken
        let replay = try await fixture.server.request(
            .POST, fixture.base + "/changes", session: bob, apiToken: fixture.app.apiToken, json: #"{"syncToken":"\#(annToken)"}"#
        )
        #expect(replay.errorCode == .changeTokenExpired)
        #expect(try await fixture.modify(Self.set("diary", "bob's"), session: bob).status == 200)
        #expect(try await fixture.values() == ["diary": .string("ann's secret")])
    }

    // MARK: Limits

    @Test func aBatchBreakingTheKeyCountIsRejectedWhole() async throws {
        let fixture = try await Fixture.make()
        let fill = (0..<1020).map { #"{"operationType":"set","key":"k\#($0)","value":{"type":"BOOLEAN","value":true}}"# }
        #expect(try await fixture.modify(#"{"operations":[\#(fill.joined(separator: ","))]}"#).status == 200)
        let over = (0..<5).map { #"{"operationType":"set","key":"n\#($0)","value":{"type":"BOOLEAN","value":true}}"# }
        let response = try await fixture.modify(#"{"operations":[\#(over.joined(separator: ","))]}"#)
        #expect(response.status == 413)
        #expect(response.errorCode == .kvLimitExceeded)
        #expect(response.error?.limit == "keyCount")
        #expect(try await fixture.values().count == 1020)
        #expect(try await fixture.sequence() == 1020)
        // Replacing and removing keys in the same batch stays within the limit.
        let swap =
            #"{"operations":[{"operationType":"remove","key":"k0"},{"operationType":"set","key":"n0","value":{"type":"BOOLEAN","value":true}}]}"#
        #expect(try await fixture.modify(swap).status == 200)
    }

    @Test func aBatchBreakingTheTotalSizeIsRejectedWhole() async throws {
        let fixture = try await Fixture.make()
        let half = Data(count: 600_000).base64EncodedString()
        let first = #"{"operations":[{"operationType":"set","key":"a","value":{"type":"BYTES","value":"\#(half)"}}]}"#
        #expect(try await fixture.modify(first).status == 200)
        let second =
            #"{"operations":[{"operationType":"set","key":"small","value":{"type":"STRING","value":"x"}},{"operationType":"set","key":"b","value":{"type":"BYTES","value":"\#(half)"}}]}"#
        let response = try await fixture.modify(second)
        #expect(response.errorCode == .kvLimitExceeded)
        #expect(response.error?.limit == "totalBytes")
        #expect(try await fixture.values().keys.sorted() == ["a"])
    }

    @Test func oversizedValuesAndKeysAreRejected() async throws {
        let fixture = try await Fixture.make()
        let big = String(repeating: "x", count: (1 << 20) + 1)
        let value = try await fixture.modify(Self.set("k", big))
        #expect(value.errorCode == .kvLimitExceeded)
        #expect(value.error?.limit == "valueBytes")
        let key = try await fixture.modify(Self.set(String(repeating: "k", count: 65), "v"))
        #expect(key.errorCode == .kvLimitExceeded)
        #expect(key.error?.limit == "keyBytes")
        #expect(try await fixture.sequence() == 0)
    }

    // MARK: Bad input

    @Test(arguments: [
        "{not json",
        #"{"operations":"set everything"}"#,
        #"{"operations":[]}"#,
        #"{"operations":[{"operationType":"set","key":"k"}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"INT64","value":"seven"}}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"QUATERNION","value":1}}]}"#,
        #"{"operations":[{"operationType":"frobnicate","key":"k"}]}"#,
        #"{"operations":[{"operationType":"set","key":"","value":{"type":"BOOLEAN","value":true}}]}"#,
        #"{"operations":[{"operationType":"set","key":"ok","value":{"type":"BOOLEAN","value":true}},{"operationType":"set","key":"bad","value":{"type":"TIMESTAMP","value":"noon"}}]}"#,
        // Beyond the dates the wire carries: this one crashed the server when it was written back out.
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"TIMESTAMP","value":9223372036854775807}}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"LIST","value":[{"type":"TIMESTAMP","value":-8640000000000001}]}}]}"#,
    ])
    func malformedBatchesAreBadRequestsAndChangeNothing(_ body: String) async throws {
        let fixture = try await Fixture.make()
        let response = try await fixture.modify(body)
        #expect(response.status == 400)
        #expect(response.errorCode == .badRequest)
        #expect(try await fixture.sequence() == 0)
    }

    @Test func hugeBodiesAreRefused() async throws {
        let fixture = try await Fixture.make()
        let response = try await fixture.modify(Self.set("k", String(repeating: "x", count: 6 << 20)))
        #expect(response.status == 413)
        #expect(response.errorCode == .requestTooLarge)
        #expect(try await fixture.sequence() == 0)
        // Each error is its own occurrence, with its own uuid to quote.
        let again = try await fixture.modify(Self.set("k", String(repeating: "x", count: 6 << 20)))
        #expect(again.errorCode == .requestTooLarge && again.error?.uuid != response.error?.uuid)
    }

    @Test func foreignAndForgedTokensAreRefused() async throws {
        let fixture = try await Fixture.make()
        #expect(try await fixture.modify(Self.set("k", "v")).status == 200)
        let forged = ChangeToken(zoneID: 99, sequence: 1).encoded
        let future = ChangeToken(zoneID: 1, sequence: 1000).encoded
        for (token, code) in [("garbage!", ErrorCode.badRequest), (forged, .changeTokenExpired), (future, .changeTokenExpired)] {
            let response = try await fixture.server.request(
                .POST, fixture.base + "/changes", session: fixture.ann, apiToken: fixture.app.apiToken,
                json: #"{"syncToken":"\#(token)"}"#)
            #expect(response.errorCode == code)
        }
    }

    @Test func storeIdentifiersThatAreNotReverseDNSAreRefused() async throws {
        let fixture = try await Fixture.make()
        let response = try await fixture.server.request(
            .GET, "/kv/1/..%2F..%2Fetc/values", session: fixture.ann, apiToken: fixture.app.apiToken)
        #expect(response.status == 400)
        #expect(response.errorCode == .badRequest)
    }

    @Test func sessionsOverTheirRateAreThrottledWithRetryAfter() async throws {
        let fixture = try await Fixture.make { $0.sessionRateLimit = RateLimitFixture.tight }
        var last: RawResponse?
        for _ in 0..<4 {
            last = try await fixture.server.request(
                .GET, fixture.base + "/values", session: fixture.ann, apiToken: fixture.app.apiToken)
        }
        #expect(last?.status == 429)
        #expect(last?.errorCode == .throttled)
        #expect((last?.error?.retryAfter ?? 0) >= 1)
        #expect(last?.headers.first(name: "Retry-After") != nil)
        fixture.server.clock.advance(by: 61)
        #expect(
            try await fixture.server.request(.GET, fixture.base + "/values", session: fixture.ann, apiToken: fixture.app.apiToken)
                .status == 200)
    }

    @Test func apiTokensOverTheirRateAreThrottled() async throws {
        let fixture = try await Fixture.make { $0.apiTokenRateLimit = RateLimitFixture.tight }
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        var statuses = [Int]()
        for session in [fixture.ann, bob, fixture.ann, bob] {
            statuses.append(
                try await fixture.server.request(.GET, fixture.base + "/values", session: session, apiToken: fixture.app.apiToken)
                    .status)
        }
        #expect(statuses == [200, 200, 200, 429])
    }
}
