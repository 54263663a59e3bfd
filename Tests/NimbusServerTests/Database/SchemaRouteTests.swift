import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Schema export, import and deploy: production only grows, and adding an index needs no rebuild.
@Suite(.cleansUp) struct SchemaRouteTests {
    @Test func developmentGrowsThenDeploysAdditivelyToProduction() async throws {
        let fixture = try await DatabaseFixture.make()
        let admin = try await fixture.server.signInAdministrator()
        let client = NimbusClient(session: admin, apiToken: nil)
        let base = "/admin/1/containers/\(fixture.app.container)/schema"

        _ = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"i1","recordType":"Items","fields":{"name":{"value":"milk"}}}}]}"#
        )
        let development: SchemaDocument = try await client.send(.GET, base + "/development")
        #expect(development.text.contains("RECORD TYPE Items"))
        #expect(
            try await fixture.post(
                "records/modify", #"{"operations":[{"operationType":"create","record":{"recordType":"Items"}}]}"#,
                environment: "production"
            )
            .decode(RecordsResponse.self).records.codes == [.badRequest])

        let preview: SchemaDeployResponse = try await client.send(
            .POST, base + "/deploy", body: SchemaDeployRequest(dryRun: true))
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
        await #expect(throws: NimbusError.self) {
            let _: SchemaDocument = try await client.send(.PUT, base + "/development", body: retyped)
        }
        let broken = try await fixture.server.request(
            .PUT, base + "/development", session: admin, json: #"{"text":"DEFINE SCHEMA\nRECORD TYPE ("}"#)
        #expect(broken.errorCode == .badRequest && broken.error?.reason.contains("line") == true)

        // Removing an index in development, deploying it, is a change production accepts; adding it back
        // needs no rebuild: records saved meanwhile are found at once.
        let lessIndexed = SchemaDocument(
            text: "DEFINE SCHEMA\nRECORD TYPE Items (name STRING SORTABLE, color STRING QUERYABLE);\n")
        let _: SchemaDocument = try await client.send(.PUT, base + "/development", body: lessIndexed)
        let _: SchemaDeployResponse = try await client.send(.POST, base + "/deploy", body: SchemaDeployRequest())
        let query =
            #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"name","comparator":"EQUALS","fieldValue":{"value":"bread"}}]}}"#
        #expect(try await fixture.post("records/query", query, environment: "production").errorCode == .badRequest)
        let reindexed = SchemaDocument(
            text: "DEFINE SCHEMA\nRECORD TYPE Items (name STRING QUERYABLE SORTABLE, color STRING QUERYABLE);\n")
        let _: SchemaDocument = try await client.send(.PUT, base + "/development", body: reindexed)
        let _: SchemaDeployResponse = try await client.send(.POST, base + "/deploy", body: SchemaDeployRequest())
        #expect(try await fixture.query(query, environment: "production").records.names == ["p1"])

        // A production type that development lacks (here written behind the server's back) makes the
        // deploy refuse, naming it, and leaves production as it was.
        _ = try await fixture.server.store.updateSchemaText(container: fixture.app.container, environment: "production") { text in
            ((text ?? "") + "RECORD TYPE Legacy (x INT64);\n", [])
        }
        let refused = try await fixture.server.request(.POST, base + "/deploy", session: admin, json: "{}")
        #expect(refused.errorCode == .badRequest && refused.error?.reason.contains("Legacy") == true)
        let kept = try await fixture.server.store.schemaText(container: fixture.app.container, environment: "production")
        #expect(kept?.contains("Legacy") == true)
        let notAdmin = try await fixture.server.request(.GET, base + "/development", session: fixture.ann)
        #expect(notAdmin.errorCode == .accessDenied)
    }

    @Test func failedSavesLeaveTheDevelopmentSchemaAsItWas() async throws {
        let fixture = try await DatabaseFixture.make()
        typealias Modify = RecordModifyTests
        func schema() async throws -> String {
            try await fixture.server.store.schemaText(container: fixture.app.container, environment: "development") ?? ""
        }
        #expect(
            try await fixture.post(
                "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#
            ).status == 200)
        #expect(
            try await fixture.modify(
                Modify.batch(Modify.op("create", "taken", fields: #""name":{"value":"milk"}"#), zone: "Lists")
            ).codes == [nil])
        let before = try await schema()

        // An atomic batch that fails adds neither the new type nor the new field it named.
        let atomic = try await fixture.modify(
            Modify.batch(
                Modify.op("create", "n1", recordType: "Notes", fields: #""text":{"value":"hi"}"#),
                Modify.op("create", "taken", fields: #""color":{"value":"red"}"#), zone: "Lists"))
        #expect(atomic.codes == [.atomicError, .exists])
        #expect(try await schema() == before)

        // Record by record (the default zone), only the records saved add their fields.
        let mixed = try await fixture.modify(
            Modify.batch(
                Modify.op("update", "missing", tag: "1", fields: #""size":{"value":3}"#),
                Modify.op("create", "saved", fields: #""weight":{"value":2.5}"#)))
        #expect(mixed.codes == [.notFound, nil])
        let grown = try await schema()
        #expect(
            grown.contains("weight DOUBLE") && !grown.contains("size") && !grown.contains("Notes") && !grown.contains("color"))

        // The server's cached schema follows what committed: the new field is queryable at once, and the
        // first value of a field still fixes its type.
        let query =
            #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"weight","comparator":"EQUALS","fieldValue":{"value":2.5}}]}}"#
        #expect(try await fixture.query(query).records.names == ["saved"])
        #expect(
            try await fixture.modify(Modify.batch(Modify.op("create", "retyped", fields: #""weight":{"value":"heavy"}"#))).codes
                == [.badRequest])
        #expect(try await schema() == grown)
    }

    /// Records modified since a time: a filter on a system field, which needs the schema to index it.
    static let modifiedSince =
        #"{"query":{"recordType":"Items","filterBy":[{"systemFieldName":"modifiedTimestamp","comparator":"GREATER_THAN","#
        + #""fieldValue":{"value":0,"type":"TIMESTAMP"}}],"sortBy":[{"fieldName":"name"}]}}"#

    @Test func declaringASystemFieldsIndexIndexesTheRecordsStoredBefore() async throws {
        let fixture = try await DatabaseFixture.make()
        typealias Modify = RecordModifyTests
        let client = NimbusClient(session: try await fixture.server.signInAdministrator(), apiToken: nil)
        let deploy = "/admin/1/containers/\(fixture.app.container)/schema/deploy"
        #expect(
            try await fixture.modify(Modify.batch(Modify.op("create", "d1", fields: #""name":{"value":"milk"}"#))).codes == [nil])
        let _: SchemaDeployResponse = try await client.send(.POST, deploy, body: SchemaDeployRequest())
        #expect(
            try await fixture.modify(
                Modify.batch(Modify.op("create", "p1", fields: #""name":{"value":"bread"}"#)), environment: "production"
            )
            .codes == [nil])
        let unindexed = try await fixture.post("records/query", Self.modifiedSince, environment: "production")
        #expect(
            unindexed.errorCode == .badRequest && unindexed.error?.reason.contains(#"`"___modTime" TIMESTAMP QUERYABLE`"#) == true
        )

        // Development declares the index, and a deploy copies it: each environment's records saved before
        // are found by it, and so are those saved after.
        try await fixture.server.indexSystemFields(["___modTime"], of: "Items", container: fixture.app.container)
        #expect(try await fixture.query(Self.modifiedSince).records.names == ["d1"])
        #expect(try await fixture.post("records/query", Self.modifiedSince, environment: "production").errorCode == .badRequest)
        let _: SchemaDeployResponse = try await client.send(.POST, deploy, body: SchemaDeployRequest())
        #expect(
            try await fixture.modify(
                Modify.batch(Modify.op("create", "p2", fields: #""name":{"value":"apples"}"#)), environment: "production"
            )
            .codes == [nil])
        #expect(try await fixture.query(Self.modifiedSince, environment: "production").records.names == ["p2", "p1"])

        // A system field has its own type, and only system fields may start with an underscore.
        let before = try await fixture.server.store.schemaText(container: fixture.app.container, environment: "development")
        for (field, reason) in [
            (#""___createTime" STRING QUERYABLE"#, "system field ___createTime of record type Items is TIMESTAMP, not STRING"),
            (#""___createdBy" LIST<REFERENCE>"#, "is REFERENCE, not REFERENCE_LIST"),
            (#""___bogus" INT64"#, #"field name "___bogus" must start with a letter"#),
        ] {
            let text =
                #"DEFINE SCHEMA RECORD TYPE Items ("___modTime" TIMESTAMP QUERYABLE SORTABLE, name STRING QUERYABLE SORTABLE SEARCHABLE, \#(field));"#
            let refused = try await fixture.server.request(
                .PUT, "/admin/1/containers/\(fixture.app.container)/schema/development",
                session: try await fixture.server.signInAdministrator(),
                json: try String(decoding: JSONEncoder().encode(SchemaDocument(text: text)), as: UTF8.self))
            #expect(refused.errorCode == .badRequest && refused.error?.reason.contains(reason) == true, "\(field)")
        }
        #expect(try await fixture.server.store.schemaText(container: fixture.app.container, environment: "development") == before)
    }

    @Test func aSaveIndexesByTheSchemaItsTransactionSees() async throws {
        let fixture = try await DatabaseFixture.make()
        typealias Modify = RecordModifyTests
        let container = fixture.app.container
        #expect(
            try await fixture.modify(Modify.batch(Modify.op("create", "i1", fields: #""name":{"value":"milk"}"#))).codes == [nil])
        // The server caches the schema as it reads it here...
        #expect(try await fixture.query(#"{"query":{"recordType":"Items"}}"#).records.names == ["i1"])
        // ...and a change commits after a request has read that cache (here made in the store, behind the
        // server's back, and without indexing i1).
        _ = try await fixture.server.store.updateSchemaText(container: container, environment: "development") { text in
            var schema = try Schema(parsing: text ?? "")
            let items = try #require(schema.recordTypes.firstIndex { $0.name == "Items" })
            schema.recordTypes[items].fields.append(Schema.Field(name: "___modTime", type: "TIMESTAMP", queryable: true))
            return (schema.text, [])
        }
        #expect(
            try await fixture.modify(Modify.batch(Modify.op("create", "i2", fields: #""name":{"value":"mints"}"#))).codes == [nil]
        )
        // Importing the stored schema as it is makes the server read it again: the save wrote the row the
        // stored schema asked for, though the cache did not know of it.
        let stored = try #require(try await fixture.server.store.schemaText(container: container, environment: "development"))
        let client = NimbusClient(session: try await fixture.server.signInAdministrator(), apiToken: nil)
        let _: SchemaDocument = try await client.send(
            .PUT, "/admin/1/containers/\(container)/schema/development", body: SchemaDocument(text: stored))
        #expect(try await fixture.query(Self.modifiedSince).records.names == ["i2"])
    }
}
