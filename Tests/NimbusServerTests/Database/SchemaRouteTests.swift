import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Schema export, import and deploy: production only grows, and adding an index needs no rebuild.
@Suite struct SchemaRouteTests {
    @Test func developmentGrowsThenDeploysAdditivelyToProduction() async throws {
        let fixture = try await DatabaseFixture.make()
        defer { Task { await fixture.stop() } }
        let admin = try await fixture.server.signInAdministrator()
        let client = NimbusClient(session: admin, apiToken: nil)
        let base = "/admin/1/containers/\(fixture.app.container)/schema"

        _ = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"i1","recordType":"Items","fields":{"name":{"value":"milk"}}}}]}"#)
        let development: SchemaDocument = try await client.send(.GET, base + "/development")
        #expect(development.text.contains("RECORD TYPE Items"))
        #expect(try await fixture.post("records/modify", #"{"operations":[{"operationType":"create","record":{"recordType":"Items"}}]}"#, environment: "production")
            .decode(RecordsResponse.self).records.codes == [.badRequest])

        let preview: SchemaDeployResponse = try await client.send(.POST, base + "/deploy", body: SchemaDeployRequest(dryRun: true))
        #expect(preview.changes.contains("+ record type Items") && !preview.deployed)
        let production: SchemaDocument = try await client.send(.GET, base + "/production")
        #expect(!production.text.contains("Items"), "a dry run changes nothing")
        let deployed: SchemaDeployResponse = try await client.send(.POST, base + "/deploy", body: SchemaDeployRequest())
        #expect(deployed.deployed)
        let saved = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"p1","recordType":"Items","fields":{"name":{"value":"bread"}}}}]}"#,
            environment: "production")
        #expect(saved.codes == [nil])

        // Production refuses fields it does not know, and the import may not retype a field.
        let unknownField = try await fixture.modify(
            #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"p1","fields":{"color":{"value":"red"}}}}]}"#,
            environment: "production")
        #expect(unknownField.codes == [.badRequest])
        let retyped = SchemaDocument(text: "DEFINE SCHEMA\nRECORD TYPE Items (name INT64);\n")
        await #expect(throws: NimbusError.self) { let _: SchemaDocument = try await client.send(.PUT, base + "/development", body: retyped) }
        let broken = try await fixture.server.request(
            .PUT, base + "/development", session: admin, json: #"{"text":"DEFINE SCHEMA\nRECORD TYPE ("}"#)
        #expect(broken.errorCode == .badRequest && broken.error?.reason.contains("line") == true)

        // Removing an index in development, deploying it, is a change production accepts; adding it back
        // needs no rebuild: records saved meanwhile are found at once.
        let lessIndexed = SchemaDocument(text: "DEFINE SCHEMA\nRECORD TYPE Items (name STRING SORTABLE, color STRING QUERYABLE);\n")
        let _: SchemaDocument = try await client.send(.PUT, base + "/development", body: lessIndexed)
        let _: SchemaDeployResponse = try await client.send(.POST, base + "/deploy", body: SchemaDeployRequest())
        let query = #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"name","comparator":"EQUALS","fieldValue":{"value":"bread"}}]}}"#
        #expect(try await fixture.post("records/query", query, environment: "production").errorCode == .badRequest)
        let reindexed = SchemaDocument(text: "DEFINE SCHEMA\nRECORD TYPE Items (name STRING QUERYABLE SORTABLE, color STRING QUERYABLE);\n")
        let _: SchemaDocument = try await client.send(.PUT, base + "/development", body: reindexed)
        let _: SchemaDeployResponse = try await client.send(.POST, base + "/deploy", body: SchemaDeployRequest())
        #expect(try await fixture.query(query, environment: "production").records.names == ["p1"])

        // A production type that development lacks (here written behind the server's back) makes the
        // deploy refuse, naming it, and leaves production as it was.
        _ = try await fixture.server.store.updateSchemaText(container: fixture.app.container, environment: "production") { text in
            (text ?? "") + "RECORD TYPE Legacy (x INT64);\n"
        }
        let refused = try await fixture.server.request(.POST, base + "/deploy", session: admin, json: "{}")
        #expect(refused.errorCode == .badRequest && refused.error?.reason.contains("Legacy") == true)
        let kept = try await fixture.server.store.schemaText(container: fixture.app.container, environment: "production")
        #expect(kept?.contains("Legacy") == true)
        let notAdmin = try await fixture.server.request(.GET, base + "/development", session: fixture.ann)
        #expect(notAdmin.errorCode == .accessDenied)
    }
}
