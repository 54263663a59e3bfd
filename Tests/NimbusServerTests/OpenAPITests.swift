import Foundation
import NIOCore
import NimbusCore
import NimbusTesting
import Testing

@testable import NimbusServer

@Suite(.cleansUp) struct OpenAPITests {
    /// `/kv/1/:store/values` → `/kv/1/{store}/values`
    static func openAPIPath(_ routerPath: String) -> String {
        "/"
            + routerPath.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(
                separator: "/")
    }

    @Test func theDocumentDescribesExactlyTheServedRoutes() async throws {
        let server = try await TestServer.start()
        let served = Set(
            (server.server.makeRouter().routes + server.server.makePushRouter().routes).map {
                "\($0.method.rawValue.lowercased()) \(Self.openAPIPath($0.path.description))"
            })

        let response = try await server.request(.GET, "/openapi.json")
        #expect(response.status == 200)
        let document = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0) \(path)" } })

        #expect(served.subtracting(documented).isEmpty, "served but undocumented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served).sorted())")
        #expect(served.count > 20)
    }

    /// Every operation lists the statuses it answers (no catch-all `default`), environment and database are
    /// the closed sets they are, and an item of a batch answer is either a record or an error, never both.
    @Test func theDocumentIsExact() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: OpenAPIDocument.encoded()) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: [String: Any]]])
        for (path, operations) in paths {
            for (method, operation) in operations {
                let responses = try #require(operation["responses"] as? [String: Any])
                #expect(responses["default"] == nil, "\(method) \(path)")
                #expect(
                    responses.keys.contains { $0.hasPrefix("2") || $0 == "101" } && responses["429"] != nil, "\(method) \(path)")
            }
        }
        let modify = try #require(paths["/database/1/{container}/{environment}/{database}/records/modify"]?["post"])
        let parameters = try #require(modify["parameters"] as? [[String: Any]])
        let enums = Dictionary(
            uniqueKeysWithValues: parameters.map {
                ($0["name"] as! String, ($0["schema"] as? [String: Any])?["enum"] as? [String])
            })
        #expect(enums["environment"] == ["development", "production"] && enums["database"] == ["private", "public", "shared"])
        #expect((paths["/auth/1/signout"]?["post"]?["responses"] as? [String: Any])?["204"] != nil)
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        for name in ["Record", "Zone"] {
            #expect((schemas[name]?["not"] as? [String: Any])?["required"] as? [String] == ["serverErrorCode"], "\(name)")
        }
    }

    /// The check every test server runs on its answers finds what does not conform, and only that.
    @Test func answersAreCheckedAgainstTheDocument() throws {
        let check = SchemaCheck()
        let record: JSONValue = ["$ref": "#/components/schemas/RecordOrError"]
        func problems(_ json: String, _ schema: JSONValue) throws -> [String] {
            check.problems(try JSONTree(parsing: Array(json.utf8)), against: schema)
        }
        #expect(try problems(#"{"recordName":"a","fields":{"n":{"value":1,"type":"INT64"}}}"#, record).isEmpty)
        #expect(try problems(#"{"recordName":"a","reason":"r","serverErrorCode":"NOT_FOUND","uuid":"u"}"#, record).isEmpty)
        #expect(try problems(#"{"recordName":5}"#, record).count == 1)
        #expect(
            try problems(#"{"reason":"r","uuid":"u"}"#, ["$ref": "#/components/schemas/Error"]) == [
                "$: serverErrorCode is required"
            ])
        #expect(
            try problems(#"{"sequence":1.5,"syncToken":"t"}"#, ["$ref": "#/components/schemas/KeyValueModifyResponse"]).count == 1
        )

        let conformance = DocumentConformance()
        conformance.record(method: "post", path: "/auth/1/signout", status: 204, contentType: nil, body: nil)
        #expect(conformance.violations.isEmpty)
        conformance.record(method: "post", path: "/auth/1/signout", status: 200, contentType: nil, body: nil)
        conformance.record(
            method: "post", path: "/kv/1/T.com.x/modify", status: 200, contentType: "application/json",
            body: ByteBuffer(string: #"{"syncToken":"t"}"#))
        conformance.record(method: "get", path: "/health", status: 200, contentType: "text/html", body: nil)
        #expect(conformance.violations.count == 3, "\(conformance.violations)")
    }

    @Test func everySchemaReferenceResolves() async throws {
        let data = try OpenAPIDocument.encoded()
        let text = String(decoding: data, as: UTF8.self)
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let references = text.components(separatedBy: "#/components/schemas/").dropFirst().map { $0.prefix { $0 != "\"" } }
        #expect(!references.isEmpty)
        for reference in references { #expect(schemas[String(reference)] != nil, "missing schema \(reference)") }
    }
}

@Suite(.cleansUp) struct SystemRouteTests {
    @Test func healthAnswers() async throws {
        let server = try await TestServer.start()
        let response = try await server.request(.GET, "/health")
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self).contains("ok"))
    }

    @Test func metricsCountRequestsPerRoute() async throws {
        let server = try await TestServer.start()
        for _ in 0..<3 { _ = try await server.request(.GET, "/health") }
        let response = try await server.request(.GET, "/metrics")
        #expect(response.status == 200)
        let text = String(decoding: response.body, as: UTF8.self)
        let healthCount = text.split(separator: "\n").first { $0.hasPrefix("hb_requests") && $0.contains("/health") }
        #expect(healthCount != nil, "no request counter for /health in:\n\(text.prefix(2000))")
        #expect(text.contains("http_server_request_duration"))
    }

    @Test func unknownRoutesAnswerNotFoundWithAnErrorBody() async throws {
        let server = try await TestServer.start()
        let response = try await server.request(.GET, "/nope/../../etc/passwd")
        #expect(response.status == 404)
        #expect(response.errorCode == .notFound)
        #expect(response.error?.uuid.isEmpty == false)
    }
}
