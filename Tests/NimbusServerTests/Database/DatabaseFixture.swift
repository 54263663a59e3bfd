import Foundation
import NIOHTTP1
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusTesting
import Testing

/// A server with one app and a signed-in user, spoken to as a CloudKit web client does: credentials as
/// `ckAPIToken` / `ckWebAuthToken` query parameters, JSON bodies.
struct DatabaseFixture {
    let server: TestServer
    let app: TestServer.SeededApp
    let ann: NimbusSession

    static func make(on backend: TestServer.Backend = .embedded, dataDirectory: URL? = nil) async throws -> DatabaseFixture {
        let server = try await TestServer.start(on: backend, dataDirectory: dataDirectory)
        let app = try await server.seedApp()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        return DatabaseFixture(server: server, app: app, ann: ann)
    }

    /// Runs `body` with a fixture, then shuts its server down and waits until it has stopped, whether
    /// `body` succeeded or not.
    static func run<T>(dataDirectory: URL? = nil, _ body: (DatabaseFixture) async throws -> T) async throws -> T {
        let fixture = try await make(dataDirectory: dataDirectory)
        do {
            let result = try await body(fixture)
            await fixture.stop()
            return result
        } catch {
            await fixture.stop()
            throw error
        }
    }

    /// A path with credentials; `anonymous` leaves the user's token out (the public database allows that).
    func path(
        _ operation: String, environment: String = "development", database: String = "private", session: NimbusSession? = nil,
        anonymous: Bool = false
    ) -> String {
        let base = "/database/1/\(app.container)/\(environment)/\(database)/\(operation)?ckAPIToken=\(app.apiToken)"
        guard !anonymous else { return base }
        return base + "&ckWebAuthToken=" + (session ?? ann).sessionToken.addingPercentEncoding(
            withAllowedCharacters: .alphanumerics)!
    }

    func post(
        _ operation: String, _ json: String, environment: String = "development", database: String = "private",
        session: NimbusSession? = nil, anonymous: Bool = false
    ) async throws -> RawResponse {
        try await server.request(
            .POST, path(operation, environment: environment, database: database, session: session, anonymous: anonymous),
            headers: [("Content-Type", "text/plain")], body: Data(json.utf8))
    }

    func get(_ operation: String, environment: String = "development", session: NimbusSession? = nil) async throws -> RawResponse
    {
        try await server.request(.GET, path(operation, environment: environment, session: session))
    }

    /// Posts `records/modify` and returns the per-item answers.
    func modify(_ json: String, environment: String = "development", session: NimbusSession? = nil) async throws -> [RecordResult]
    {
        let response = try await post("records/modify", json, environment: environment, session: session)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        return try response.decode(RecordsResponse.self).records
    }

    func query(_ json: String, environment: String = "development") async throws -> RecordsQueryResponse {
        let response = try await post("records/query", json, environment: environment)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        return try response.decode(RecordsQueryResponse.self)
    }

    func stop() async { await server.stop() }
}

extension RecordResult {
    var record: RecordWire? { if case .record(let record) = self { record } else { nil } }
    var failure: RecordError? { if case .failure(let failure) = self { failure } else { nil } }
}

extension ZoneResult {
    var failure: ZoneError? { if case .failure(let failure) = self { failure } else { nil } }
}

extension Array where Element == RecordResult {
    var names: [String?] { map { $0.record?.recordName } }
    var codes: [ErrorCode?] { map { $0.failure?.serverErrorCode } }
}
