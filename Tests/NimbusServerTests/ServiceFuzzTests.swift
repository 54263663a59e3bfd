import Crypto
import Foundation
import NIOHTTP1
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Valid bodies of the account, developer and key-value routes with parts replaced (`JSONMutator`), and
/// their path segments replaced by odd ones: every answer is a 2xx, or a 4xx with a code, never a 500, on
/// either backend.
@Suite(.cleansUp) struct ServiceFuzzTests {
    enum Caller { case nobody, user, administrator }

    struct Seed {
        var method: HTTPMethod
        var caller: Caller
        var path: String
        var body: String?
    }

    struct Fixture {
        let server: TestServer
        let app: TestServer.SeededApp
        let ann: NimbusSession
        let administrator: NimbusSession

        static func make(on backend: TestServer.Backend) async throws -> Fixture {
            let server = try await TestServer.start(on: backend)
            return Fixture(
                server: server, app: try await server.seedApp(),
                ann: try await server.signIn(email: "ann@example.com", device: "phone"),
                administrator: try await server.signInAdministrator())
        }

        func send(_ seed: Seed, path: String? = nil, body: String? = nil) async throws -> RawResponse {
            switch seed.caller {
            case .nobody: try await server.request(seed.method, path ?? seed.path, json: body ?? seed.body)
            case .user:
                try await server.request(
                    seed.method, path ?? seed.path, session: ann, apiToken: app.apiToken, json: body ?? seed.body)
            case .administrator:
                try await server.request(seed.method, path ?? seed.path, session: administrator, json: body ?? seed.body)
            }
        }

        /// One of each route's requests, well formed, touching most of what the route reads.
        func seeds() -> [Seed] {
            let container = app.container
            let publicKey = P256.Signing.PrivateKey().publicKey.pemRepresentation
            let kv = "/kv/1/\(app.storeIdentifier)"
            return [
                Seed(
                    method: .POST, caller: .user, path: "\(kv)/modify",
                    body: #"{"operations":[{"operationType":"set","key":"k","value":{"type":"STRING","value":"v"}},"#
                        + #"{"operationType":"set","key":"d","value":{"type":"DICTIONARY","value":{"n":{"type":"INT64","value":1},"#
                        + #""l":{"type":"LIST","value":[{"type":"TIMESTAMP","value":1700000000000},{"type":"BYTES","value":"aGk="},"#
                        + #"{"type":"DOUBLE","value":1.5},{"type":"BOOLEAN","value":true}]}}}},{"operationType":"remove","key":"x"}]}"#
                ),
                Seed(method: .POST, caller: .user, path: "\(kv)/changes", body: #"{"resultsLimit":10}"#),
                Seed(method: .GET, caller: .user, path: "\(kv)/values"),
                Seed(
                    method: .POST, caller: .nobody, path: "/auth/1/signup",
                    body: #"{"email":"fuzz@example.com","password":"a long password"}"#),
                Seed(
                    method: .POST, caller: .nobody, path: "/auth/1/signin",
                    body:
                        #"{"email":"ann@example.com","password":"\#(TestServer.password)","deviceName":"fuzzer","deviceID":"fuzz-device"}"#
                ),
                Seed(method: .GET, caller: .user, path: "/auth/1/devices"),
                Seed(
                    method: .POST, caller: .administrator, path: "/admin/1/teams", body: #"{"teamID":"FUZZ123456","name":"Fuzz"}"#
                ),
                Seed(
                    method: .POST, caller: .administrator, path: "/admin/1/apps",
                    body:
                        #"{"bundleID":"com.example.Fuzz","teamID":"\#(app.teamID)","keyValueStoreIdentifier":"\#(app.teamID).com.example.Fuzz"}"#
                ),
                Seed(
                    method: .POST, caller: .administrator, path: "/admin/1/containers",
                    body: #"{"identifier":"iCloud.com.example.Fuzz","teamID":"\#(app.teamID)"}"#),
                Seed(
                    method: .POST, caller: .administrator, path: "/admin/1/apps/\(app.bundleID)/entitlements",
                    body: #"{"container":"\#(container)"}"#),
                Seed(
                    method: .POST, caller: .administrator, path: "/admin/1/tokens",
                    body: #"{"container":"\#(container)","bundleID":"\#(app.bundleID)","name":"fuzz"}"#),
                Seed(
                    method: .POST, caller: .administrator, path: "/admin/1/keys",
                    body: String(
                        decoding: try! JSONEncoder().encode(CreateServerKeyRequest(container: container, publicKey: publicKey)),
                        as: UTF8.self)),
                Seed(
                    method: .PUT, caller: .administrator, path: "/admin/1/containers/\(container)/schema/development",
                    body:
                        #"{"text":"DEFINE SCHEMA\n  CREATE ROLE Editors;\n  RECORD TYPE Notes (\n    text STRING QUERYABLE SEARCHABLE,\n    GRANT WRITE TO \"Editors\"\n  );\n"}"#
                ),
                Seed(
                    method: .POST, caller: .administrator, path: "/admin/1/containers/\(container)/schema/deploy",
                    body: #"{"dryRun":true}"#),
                Seed(
                    method: .POST, caller: .administrator,
                    path: "/admin/1/containers/\(container)/roles/development/Editors/members",
                    body: #"{"email":"ann@example.com"}"#),
            ]
        }
    }

    @Test(arguments: TestServer.Backend.allCases)
    func mutatedBodiesNeverFailTheServer(on backend: TestServer.Backend) async throws {
        let fixture = try await Fixture.make(on: backend)
        let seeds = fixture.seeds().filter { $0.body != nil }
        for seed in seeds {
            let response = try await fixture.send(seed)
            #expect(response.status < 300, "\(seed.path): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
        var mutator = JSONMutator(seed: 2026_11_23)
        for round in 0..<600 {
            let seed = seeds[round % seeds.count]
            let json = try mutator.mutate(seed.body!)
            let response = try await fixture.send(seed, body: json)
            #expect(response.status < 500, "round \(round): \(seed.path) \(json.prefix(300))")
            if response.status >= 400 {
                #expect(response.error != nil, "round \(round): \(seed.path) answered \(response.status) without an error code")
            }
        }
        #expect(try await fixture.server.request(.GET, "/health").status == 200)
    }

    @Test(arguments: TestServer.Backend.allCases)
    func oddPathSegmentsNeverFailTheServer(on backend: TestServer.Backend) async throws {
        let fixture = try await Fixture.make(on: backend)
        let oddSegments = [
            "", "..", "%2e%2e", "%2F", "%00", "%ZZ", "😀", "%F0%9F%98%80", String(repeating: "x", count: 5000), "-1", "0",
            "9223372036854775808", "iCloud.", "a%20b", "%22%3B", "production", "_defaultZone",
        ]
        var mutator = JSONMutator(seed: 2026_11_24)
        let seeds = fixture.seeds()
        for round in 0..<400 {
            let seed = seeds[round % seeds.count]
            var segments = seed.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            // Not the leading empty segment, nor the service and version that route the request.
            let index = mutator.pick(Array(3..<segments.count))
            segments[index] = mutator.pick(oddSegments)
            let path = segments.joined(separator: "/")
            let response = try await fixture.send(seed, path: path)
            #expect(response.status < 500, "round \(round): \(seed.method) \(path.prefix(300))")
            if response.status >= 400 {
                #expect(
                    response.error != nil, "round \(round): \(path.prefix(300)) answered \(response.status) without an error code"
                )
            }
        }
        #expect(try await fixture.server.request(.GET, "/health").status == 200)
    }
}
