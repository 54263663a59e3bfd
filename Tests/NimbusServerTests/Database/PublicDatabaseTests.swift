import Foundation
import NimbusCore
import NimbusKit
import NIOHTTP1
import NimbusTesting
import Testing

/// The public database: everyone reads, signed-in users create, creators write — unless the schema's
/// grants say otherwise.
@Suite(.cleansUp) struct PublicDatabaseTests {
    static func create(_ name: String, type: String = "Posts", text: String = "hello") -> String {
        #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":{"text":{"value":"\#(text)"}}}}]}"#
    }

    static func results(_ response: RawResponse) throws -> [RecordResult] { try response.decode(RecordsResponse.self).records }

    @Test func defaultRolesLetEveryoneReadAndOnlyTheCreatorWrite() async throws {
        let fixture = try await DatabaseFixture.make()
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        let created = try Self.results(try await fixture.post("records/modify", Self.create("p1"), database: "public"))
        #expect(created.codes == [nil])
        #expect(created[0].record?.zoneID?.ownerRecordName == "__defaultOwner__")

        let lookup = #"{"records":[{"recordName":"p1"}]}"#
        #expect(
            try Self.results(try await fixture.post("records/lookup", lookup, database: "public", session: bob)).codes == [nil])
        #expect(
            try Self.results(try await fixture.post("records/lookup", lookup, database: "public", anonymous: true)).codes == [nil]
        )
        let query = try await fixture.post(
            "records/query", #"{"query":{"recordType":"Posts"}}"#, database: "public", anonymous: true)
        #expect(try query.decode(RecordsQueryResponse.self).records.names == ["p1"])

        let anonymousWrite = try await fixture.post("records/modify", Self.create("p2"), database: "public", anonymous: true)
        #expect(anonymousWrite.status == 421 && anonymousWrite.error?.redirectURL != nil)
        let bobsEdit =
            #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"p1","fields":{"text":{"value":"mine now"}}}}]}"#
        #expect(
            try Self.results(try await fixture.post("records/modify", bobsEdit, database: "public", session: bob)).codes == [
                .accessDenied
            ])
        let bobsDelete = #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"p1"}}]}"#
        #expect(
            try Self.results(try await fixture.post("records/modify", bobsDelete, database: "public", session: bob)).codes == [
                .accessDenied
            ])
        #expect(
            try Self.results(try await fixture.post("records/modify", Self.create("b1"), database: "public", session: bob)).codes
                == [nil])
        let annsEdit =
            #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"p1","fields":{"text":{"value":"edited"}}}}]}"#
        #expect(try Self.results(try await fixture.post("records/modify", annsEdit, database: "public")).codes == [nil])

        // A VALIDATE reference would keep its target from being deleted: only to records one may change.
        func reference(_ name: String, to target: String, _ action: String) -> String {
            #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Replies","fields":{"post":{"value":{"recordName":"\#(target)","action":"\#(action)"},"type":"REFERENCE"}}}}]}"#
        }
        #expect(
            try Self.results(
                try await fixture.post("records/modify", reference("r1", to: "p1", "VALIDATE"), database: "public", session: bob)
            ).codes == [.accessDenied])
        #expect(
            try Self.results(
                try await fixture.post("records/modify", reference("r1", to: "p1", "NONE"), database: "public", session: bob)
            ).codes == [nil])
        #expect(
            try Self.results(
                try await fixture.post("records/modify", reference("r2", to: "b1", "VALIDATE"), database: "public", session: bob)
            ).codes == [nil])
        let bobsOwn = #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"b1"}}]}"#
        #expect(
            try Self.results(try await fixture.post("records/modify", bobsOwn, database: "public", session: bob)).codes == [
                .validatingReferenceError
            ])

        // The public and private databases are separate: ann's private records are not public.
        _ = try await fixture.modify(Self.create("secret"))
        #expect(
            try Self.results(
                try await fixture.post("records/lookup", #"{"records":[{"recordName":"secret"}]}"#, database: "public")
            ).codes == [.notFound])
        #expect(
            try await fixture.post(
                "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z"}}}]}"#,
                database: "public"
            ).errorCode == .badRequest)
        #expect(try await fixture.post("changes/zone", #"{"zones":[{}]}"#, database: "public").errorCode == .badRequest)
    }

    @Test func grantsInTheSchemaRestrictReading() async throws {
        let fixture = try await DatabaseFixture.make()
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
        let _: SchemaDocument = try await client.send(
            .PUT, "/admin/1/containers/\(fixture.app.container)/schema/development", body: schema)

        _ = try await fixture.post("records/modify", Self.create("a1", type: "Drafts"), database: "public")
        _ = try await fixture.post("records/modify", Self.create("b1", type: "Drafts"), database: "public", session: bob)
        let bobs = try await fixture.post(
            "records/query", #"{"query":{"recordType":"Drafts"}}"#, database: "public", session: bob)
        #expect(
            try bobs.decode(RecordsQueryResponse.self).records.names == ["b1"],
            "without world READ, users see their own drafts only")
        let annsDraft = try await fixture.post(
            "records/lookup", #"{"records":[{"recordName":"a1"}]}"#, database: "public", session: bob)
        #expect(try Self.results(annsDraft).codes == [.accessDenied])
        let anonymous = try await fixture.post(
            "records/query", #"{"query":{"recordType":"Drafts"}}"#, database: "public", anonymous: true)
        #expect(anonymous.status == 421)
    }

    @Test func customRolesGrantWhatTheSchemaSaysToTheirMembers() async throws {
        let fixture = try await DatabaseFixture.make()
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        let admin = NimbusClient(session: try await fixture.server.signInAdministrator(), apiToken: nil)
        let roles = "/admin/1/containers/\(fixture.app.container)/roles/development"
        let schema = SchemaDocument(
            text: """
                DEFINE SCHEMA
                    CREATE ROLE Moderators;
                    RECORD TYPE Posts (
                        text STRING QUERYABLE,
                        GRANT READ TO "_world",
                        GRANT CREATE TO "_icloud",
                        GRANT WRITE TO "_creator",
                        GRANT WRITE TO "Moderators"
                    );
                """)
        let _: SchemaDocument = try await admin.send(
            .PUT, "/admin/1/containers/\(fixture.app.container)/schema/development", body: schema)
        #expect(try Self.results(try await fixture.post("records/modify", Self.create("p1"), database: "public")).codes == [nil])
        let moderate =
            #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"p1","fields":{"text":{"value":"[removed]"}}}}]}"#
        #expect(
            try Self.results(try await fixture.post("records/modify", moderate, database: "public", session: bob)).codes == [
                .accessDenied
            ])

        // Given the role, bob may change anyone's posts; without it again, not.
        let given: ListResponse<RoleInfo> = try await admin.send(
            .POST, roles + "/Moderators/members", body: RoleMemberRequest(email: "bob@example.com"))
        #expect(
            given.items == [
                RoleInfo(role: "Moderators", members: [.init(userRecordName: bob.userRecordName, email: "bob@example.com")])
            ])
        #expect(
            try Self.results(try await fixture.post("records/modify", moderate, database: "public", session: bob)).codes == [nil])
        let listed: ListResponse<RoleInfo> = try await admin.send(.GET, roles)
        #expect(listed.items.map(\.role) == ["Moderators"] && listed.items[0].members.count == 1)
        let production: ListResponse<RoleInfo> = try await admin.send(
            .GET, "/admin/1/containers/\(fixture.app.container)/roles/production")
        #expect(production.items.isEmpty, "roles belong to an environment's schema")
        try await admin.send(.DELETE, roles + "/Moderators/members/\(bob.userRecordName)")
        #expect(
            try Self.results(try await fixture.post("records/modify", moderate, database: "public", session: bob)).codes == [
                .accessDenied
            ])

        // Unknown roles, accounts, environments and non-administrators are refused.
        func status(_ method: HTTPMethod, _ path: String, session: NimbusSession? = nil, json: String? = nil) async throws
            -> ErrorCode?
        {
            try await fixture.server.request(method, path, session: session, json: json).error?.code
        }
        let adminSession = try await fixture.server.signInAdministrator()
        #expect(
            try await status(.POST, roles + "/Editors/members", session: adminSession, json: #"{"email":"bob@example.com"}"#)
                == .notFound)
        #expect(
            try await status(
                .POST, roles + "/Moderators/members", session: adminSession, json: #"{"email":"nobody@example.com"}"#)
                == .notFound)
        #expect(
            try await status(.POST, roles + "/Moderators/members", session: adminSession, json: #"{"mail":1}"#) == .badRequest)
        #expect(
            try await status(.GET, "/admin/1/containers/\(fixture.app.container)/roles/staging", session: adminSession)
                == .badRequest)
        #expect(try await status(.GET, "/admin/1/containers/iCloud.nope/roles/development", session: adminSession) == .notFound)
        #expect(
            try await status(.POST, roles + "/Moderators/members", session: bob, json: #"{"email":"bob@example.com"}"#)
                == .accessDenied)
    }
}
