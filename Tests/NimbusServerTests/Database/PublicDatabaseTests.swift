import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// The public database: everyone reads, signed-in users create, creators write — unless the schema's
/// grants say otherwise.
@Suite struct PublicDatabaseTests {
    static func create(_ name: String, type: String = "Posts", text: String = "hello") -> String {
        #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":{"text":{"value":"\#(text)"}}}}]}"#
    }

    static func results(_ response: RawResponse) throws -> [RecordResult] { try response.decode(RecordsResponse.self).records }

    @Test func defaultRolesLetEveryoneReadAndOnlyTheCreatorWrite() async throws {
        let fixture = try await DatabaseFixture.make()
        defer { Task { await fixture.stop() } }
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        let created = try Self.results(try await fixture.post("records/modify", Self.create("p1"), database: "public"))
        #expect(created.codes == [nil])
        #expect(created[0].record?.zoneID?.ownerRecordName == "__defaultOwner__")

        let lookup = #"{"records":[{"recordName":"p1"}]}"#
        #expect(try Self.results(try await fixture.post("records/lookup", lookup, database: "public", session: bob)).codes == [nil])
        #expect(try Self.results(try await fixture.post("records/lookup", lookup, database: "public", anonymous: true)).codes == [nil])
        let query = try await fixture.post("records/query", #"{"query":{"recordType":"Posts"}}"#, database: "public", anonymous: true)
        #expect(try query.decode(RecordsQueryResponse.self).records.names == ["p1"])

        let anonymousWrite = try await fixture.post("records/modify", Self.create("p2"), database: "public", anonymous: true)
        #expect(anonymousWrite.status == 421 && anonymousWrite.error?.redirectURL != nil)
        let bobsEdit = #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"p1","fields":{"text":{"value":"mine now"}}}}]}"#
        #expect(try Self.results(try await fixture.post("records/modify", bobsEdit, database: "public", session: bob)).codes == [.accessDenied])
        let bobsDelete = #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"p1"}}]}"#
        #expect(try Self.results(try await fixture.post("records/modify", bobsDelete, database: "public", session: bob)).codes == [.accessDenied])
        #expect(try Self.results(try await fixture.post("records/modify", Self.create("b1"), database: "public", session: bob)).codes == [nil])
        let annsEdit = #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"p1","fields":{"text":{"value":"edited"}}}}]}"#
        #expect(try Self.results(try await fixture.post("records/modify", annsEdit, database: "public")).codes == [nil])

        // The public and private databases are separate: ann's private records are not public.
        _ = try await fixture.modify(Self.create("secret"))
        #expect(try Self.results(try await fixture.post("records/lookup", #"{"records":[{"recordName":"secret"}]}"#, database: "public")).codes == [.notFound])
        #expect(try await fixture.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z"}}}]}"#, database: "public").errorCode == .badRequest)
        #expect(try await fixture.post("changes/zone", #"{"zones":[{}]}"#, database: "public").errorCode == .badRequest)
    }

    @Test func grantsInTheSchemaRestrictReading() async throws {
        let fixture = try await DatabaseFixture.make()
        defer { Task { await fixture.stop() } }
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        let admin = try await fixture.server.signInAdministrator()
        let client = NimbusClient(session: admin, apiToken: nil)
        let schema = SchemaDocument(
            text: """
                DEFINE SCHEMA
                    RECORD TYPE Drafts (
                        text STRING QUERYABLE SORTABLE,
                        GRANT CREATE TO "_icloud",
                        GRANT WRITE TO "_creator"
                    );
                """)
        let _: SchemaDocument = try await client.send(.PUT, "/admin/1/containers/\(fixture.app.container)/schema/development", body: schema)

        _ = try await fixture.post("records/modify", Self.create("a1", type: "Drafts"), database: "public")
        _ = try await fixture.post("records/modify", Self.create("b1", type: "Drafts"), database: "public", session: bob)
        let bobs = try await fixture.post("records/query", #"{"query":{"recordType":"Drafts"}}"#, database: "public", session: bob)
        #expect(try bobs.decode(RecordsQueryResponse.self).records.names == ["b1"], "without world READ, users see their own drafts only")
        let annsDraft = try await fixture.post("records/lookup", #"{"records":[{"recordName":"a1"}]}"#, database: "public", session: bob)
        #expect(try Self.results(annsDraft).codes == [.accessDenied])
        let anonymous = try await fixture.post("records/query", #"{"query":{"recordType":"Drafts"}}"#, database: "public", anonymous: true)
        #expect(anonymous.status == 421)
    }
}
