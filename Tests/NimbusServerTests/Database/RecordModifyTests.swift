import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// Each `records/modify` operation type, change tags, conflicts and atomic batches.
@Suite(.cleansUp) struct RecordModifyTests {
    static func op(_ type: String, _ name: String, tag: String? = nil, recordType: String? = "Items", fields: String? = nil)
        -> String
    {
        var record = [#""recordName":"\#(name)""#]
        if let recordType { record.append(#""recordType":"\#(recordType)""#) }
        if let tag { record.append(#""recordChangeTag":"\#(tag)""#) }
        if let fields { record.append(#""fields":{\#(fields)}"#) }
        return #"{"operationType":"\#(type)","record":{\#(record.joined(separator: ","))}}"#
    }

    static func batch(_ operations: String..., zone: String? = nil, atomic: Bool? = nil) -> String {
        var body = [#""operations":[\#(operations.joined(separator: ","))]"#]
        if let zone { body.append(#""zoneID":{"zoneName":"\#(zone)"}"#) }
        if let atomic { body.append(#""atomic":\#(atomic)"#) }
        return "{" + body.joined(separator: ",") + "}"
    }

    @Test func everyOperationType() async throws {
        let fixture = try await DatabaseFixture.make()
        let created = try await fixture.modify(
            Self.batch(Self.op("create", "a", fields: #""name":{"value":"milk"},"number":{"value":1}"#)))
        let tag = try #require(created[0].record?.recordChangeTag)
        #expect(try await fixture.modify(Self.batch(Self.op("create", "a"))).codes == [.exists])

        // update merges the fields it names; the tag moves.
        let updated = try await fixture.modify(
            Self.batch(Self.op("update", "a", tag: tag, recordType: nil, fields: #""number":{"value":2}"#)))
        let record = try #require(updated[0].record)
        #expect(record.fields == ["name": .string("milk"), "number": .int64(2)])
        #expect(record.recordChangeTag != tag)
        #expect(record.created == created[0].record?.created)

        // A stale tag is a conflict that carries the server's record.
        let stale = try await fixture.modify(
            Self.batch(Self.op("update", "a", tag: tag, recordType: nil, fields: #""number":{"value":9}"#)))
        #expect(stale.codes == [.conflict])
        #expect(stale[0].failure?.serverRecord?.fields?["number"] == .int64(2))
        #expect(stale[0].failure?.serverRecord?.recordChangeTag == record.recordChangeTag)
        #expect(
            try await fixture.modify(Self.batch(Self.op("update", "a", recordType: nil, fields: #""number":{"value":9}"#))).codes
                == [.conflict])

        // forceUpdate ignores the tag; replace drops fields it does not name.
        let forced = try await fixture.modify(
            Self.batch(Self.op("forceUpdate", "a", recordType: nil, fields: #""number":{"value":3}"#)))
        #expect(forced[0].record?.fields == ["name": .string("milk"), "number": .int64(3)])
        let replaced = try await fixture.modify(
            Self.batch(Self.op("replace", "a", tag: forced[0].record?.recordChangeTag, fields: #""number":{"value":4}"#)))
        #expect(replaced[0].record?.fields == ["number": .int64(4)])

        // The force variants create missing records; the others do not.
        #expect(
            try await fixture.modify(Self.batch(Self.op("update", "b", tag: "1", fields: #""number":{"value":1}"#))).codes == [
                .notFound
            ])
        #expect(try await fixture.modify(Self.batch(Self.op("replace", "b", tag: "1"))).codes == [.notFound])
        #expect(
            try await fixture.modify(Self.batch(Self.op("forceReplace", "b", fields: #""name":{"value":"x"}"#))).codes == [nil])
        #expect(
            try await fixture.modify(Self.batch(Self.op("forceUpdate", "c", fields: #""name":{"value":"y"}"#))).codes == [nil])

        // delete checks the tag, forceDelete does not; both need the record to exist.
        #expect(try await fixture.modify(Self.batch(Self.op("delete", "a", tag: tag))).codes == [.conflict])
        let deleted = try await fixture.modify(Self.batch(Self.op("delete", "a", tag: replaced[0].record?.recordChangeTag)))
        #expect(deleted[0].record?.deleted == true)
        #expect(try await fixture.modify(Self.batch(Self.op("forceDelete", "b"))).codes == [nil])
        #expect(try await fixture.modify(Self.batch(Self.op("forceDelete", "b"))).codes == [.notFound])
    }

    @Test func aCreateWithoutANameGetsAUUID() async throws {
        let fixture = try await DatabaseFixture.make()
        let created = try await fixture.modify(#"{"operations":[{"operationType":"create","record":{"recordType":"Items"}}]}"#)
        let name = try #require(created[0].record?.recordName)
        #expect(UUID(uuidString: name) != nil)
    }

    @Test func atomicBatchesInCustomZonesFailWhole() async throws {
        let fixture = try await DatabaseFixture.make()
        let zone = try await fixture.post(
            "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#)
        #expect(zone.status == 200)
        _ = try await fixture.modify(Self.batch(Self.op("create", "taken"), zone: "Lists"))
        let before = try await fixture.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Lists"}}]}"#).decode(
            ZoneChangesResponse.self)

        let atomic = try await fixture.modify(
            Self.batch(Self.op("create", "new1"), Self.op("create", "taken"), Self.op("create", "new2"), zone: "Lists"))
        #expect(atomic.codes == [.atomicError, .exists, .atomicError])
        let after = try await fixture.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Lists"}}]}"#).decode(
            ZoneChangesResponse.self)
        #expect(after.zones[0].syncToken == before.zones[0].syncToken)
        #expect(after.zones[0].records?.compactMap(\.recordName) == ["taken"])

        let separate = try await fixture.modify(
            Self.batch(
                Self.op("create", "new1"), Self.op("create", "taken"), Self.op("create", "new2"), zone: "Lists", atomic: false))
        #expect(separate.codes == [nil, .exists, nil])
        // The default zone saves record by record whatever `atomic` says.
        let defaultZone = try await fixture.modify(Self.batch(Self.op("create", "d1"), Self.op("create", "d1x"), atomic: true))
        #expect(defaultZone.codes == [nil, nil])
        #expect(try await fixture.modify(Self.batch(Self.op("create", "d2"), Self.op("create", "d1"))).codes == [nil, .exists])
    }

    @Test func validatingReferences() async throws {
        let fixture = try await DatabaseFixture.make()
        let reference = #""list":{"value":{"recordName":"groceries","action":"VALIDATE"},"type":"REFERENCE"}"#
        #expect(
            try await fixture.modify(Self.batch(Self.op("create", "i1", fields: reference))).codes == [.validatingReferenceError])
        // Target and referrer in one batch, target first: accepted.
        let both = try await fixture.modify(
            Self.batch(Self.op("create", "groceries", recordType: "Lists"), Self.op("create", "i1", fields: reference)))
        #expect(both.codes == [nil, nil])
        #expect(try await fixture.modify(Self.batch(Self.op("forceDelete", "groceries"))).codes == [.validatingReferenceError])
        #expect(
            try await fixture.modify(Self.batch(Self.op("forceDelete", "i1"), Self.op("forceDelete", "groceries"))).codes == [
                nil, nil,
            ])
    }

    @Test func deleteSelfCascadesThroughChainsInOneTransaction() async throws {
        let fixture = try await DatabaseFixture.make()
        func child(_ name: String, of parent: String) -> String {
            Self.op(
                "create", name, recordType: "Nodes",
                fields: #""up":{"value":{"recordName":"\#(parent)","action":"DELETE_SELF"},"type":"REFERENCE"}"#)
        }
        _ = try await fixture.modify(
            Self.batch(
                Self.op("create", "root", recordType: "Nodes"), child("a", of: "root"), child("b", of: "a"), child("c", of: "b"),
                Self.op("create", "other", recordType: "Nodes")))
        _ = try await fixture.modify(Self.batch(Self.op("forceDelete", "root")))
        let lookup = try await fixture.post(
            "records/lookup", #"{"records":[{"recordName":"a"},{"recordName":"c"},{"recordName":"other"}]}"#
        )
        .decode(RecordsResponse.self).records
        #expect(lookup.codes == [.notFound, .notFound, nil])
    }

    @Test func limitsAndMalformedOperations() async throws {
        let fixture = try await DatabaseFixture.make()
        let big = String(repeating: "x", count: 1_000_001)
        let oversized = try await fixture.modify(Self.batch(Self.op("create", "big", fields: #""name":{"value":"\#(big)"}"#)))
        #expect(oversized.codes == [.requestTooLarge])
        let many = (0...200).map { Self.op("create", "r\($0)") }.joined(separator: ",")
        #expect(try await fixture.post("records/modify", #"{"operations":[\#(many)]}"#).errorCode == .badRequest)
        #expect(try await fixture.post("records/modify", #"{"operations":[]}"#).errorCode == .badRequest)
        #expect(
            try await fixture.post("records/modify", Self.batch(Self.op("create", "x"), Self.op("forceDelete", "x"))).errorCode
                == .badRequest)
        #expect(
            try await fixture.post("records/modify", #"{"operations":[{"operationType":"explode","record":{}}]}"#).errorCode
                == .badRequest)
        #expect(
            try await fixture.post(
                "records/modify", #"{"operations":[{"operationType":"create","record":{"recordType":"Bad Type"}}]}"#
            ).errorCode == .badRequest)
        #expect(try await fixture.post("records/modify", "{not json").errorCode == .badRequest)
        // Times beyond the wire's range (JavaScript's dates) are refused.
        for value in [#"9223372036854775807,"type":"TIMESTAMP""#, #"[0,-9223372036854775808],"type":"TIMESTAMP_LIST""#] {
            let when = #""when":{"value":\#(value)}"#
            #expect(
                try await fixture.post("records/modify", Self.batch(Self.op("create", "when", fields: when))).errorCode
                    == .badRequest)
        }
        #expect(try await fixture.post("records/modify", Self.batch(Self.op("update", "a"))).errorCode == nil)
        // Nothing above was saved, so the development schema did not learn the type either.
        let lookup = try await fixture.post(
            "records/lookup", #"{"records":[{"recordName":"big"},{"recordName":"x"},{"recordName":"a"}]}"#)
        #expect(try lookup.decode(RecordsResponse.self).records.codes == [.notFound, .notFound, .notFound])
        let all = try await fixture.post("records/query", #"{"query":{"recordType":"Items"}}"#)
        #expect(all.errorCode == .badRequest && all.error?.reason.contains("not in this environment's schema") == true)
    }
}

/// The user quota: records and their assets count; a batch over it is refused whole; cleaning up works.
@Suite(.cleansUp) struct QuotaTests {
    @Test func aFullAccountCannotGrowButCanCleanUp() async throws {
        let server = try await TestServer.start { $0.userQuotaBytes = 2_500 }
        let app = try await server.seedApp()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        let base = "/database/1/\(app.container)/development/private/records/modify"
        func save(_ name: String, _ text: String) async throws -> RawResponse {
            try await server.request(
                .POST, base, session: ann, apiToken: app.apiToken,
                json:
                    #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"Notes","fields":{"text":{"value":"\#(text)"}}}}]}"#
            )
        }
        let big = String(repeating: "x", count: 700)
        #expect(try await save("a", big).status == 200)
        #expect(try await save("b", big).status == 200)
        let over = try await save("c", big)
        #expect(over.status == 413 && over.errorCode == .quotaExceeded)
        let lookup = try await server.request(
            .POST, "/database/1/\(app.container)/development/private/records/lookup", session: ann, apiToken: app.apiToken,
            json: #"{"records":[{"recordName":"c"}]}"#)
        guard case .failure(let missing) = try lookup.decode(RecordsResponse.self).records.first else {
            Issue.record("the refused record must not exist")
            return
        }
        #expect(missing.serverErrorCode == .notFound)
        let delete = try await server.request(
            .POST, base, session: ann, apiToken: app.apiToken,
            json: #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"a"}}]}"#)
        #expect(delete.status == 200)
        #expect(try await save("c", big).status == 200, "space freed by a deletion can be used again")
        // Another user has their own quota.
        let bob = try await server.signIn(email: "bob@example.com", device: "laptop")
        let bobs = try await server.request(
            .POST, base, session: bob, apiToken: app.apiToken,
            json:
                #"{"operations":[{"operationType":"create","record":{"recordName":"b1","recordType":"Notes","fields":{"text":{"value":"\#(big)"}}}}]}"#
        )
        #expect(bobs.status == 200)
    }

    /// The quota is the account's, across services and containers, as an iCloud plan is.
    @Test func theQuotaCountsEverythingTheAccountStores() async throws {
        let server = try await TestServer.start { $0.userQuotaBytes = 3_000 }
        let notes = try await server.seedApp()
        let photos = try await server.seedApp(bundleID: "com.example.Photos")
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        func save(_ app: TestServer.SeededApp, _ name: String) async throws -> RawResponse {
            try await server.request(
                .POST, "/database/1/\(app.container)/development/private/records/modify", session: ann, apiToken: app.apiToken,
                json:
                    #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Notes","fields":{"text":{"value":"\#(String(repeating: "x", count: 600))"}}}}]}"#
            )
        }
        // Key-value bytes count too.
        let keyValue = try await server.request(
            .POST, "/kv/1/\(notes.storeIdentifier)/modify", session: ann, apiToken: notes.apiToken,
            json:
                #"{"operations":[{"operationType":"set","key":"k","value":{"type":"STRING","value":"\#(String(repeating: "y", count: 700))"}}]}"#
        )
        #expect(keyValue.status == 200)
        #expect(try await save(notes, "a").status == 200)
        #expect(try await save(photos, "b").status == 200)
        let over = try await save(photos, "c")
        #expect(over.errorCode == .quotaExceeded, "\(over.status)")
    }
}
