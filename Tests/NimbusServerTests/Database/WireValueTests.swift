import Foundation
import GRDB
import NimbusCore
import NimbusStore
import NimbusTesting
import Testing

/// Values a record, a query, a subscription or a key-value batch can carry: what JSON cannot hold
/// faithfully is refused with `BAD_REQUEST` and changes nothing; what clients commonly send is read.
@Suite(.cleansUp) struct WireValueTests {
    static func create(_ name: String, fields: String) -> String {
        #"{"operations":[{"operationType":"create","record":{"recordType":"Reading","recordName":"\#(name)","fields":{\#(fields)}}}]}"#
    }

    /// Posts `body` and expects a `BAD_REQUEST` that names the problem.
    static func expectRefused(
        _ fixture: DatabaseFixture, _ operation: String, _ body: some DataProtocol, database: String = "private",
        mentioning words: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let response = try await fixture.server.request(
            .POST, fixture.path(operation, database: database), headers: [("Content-Type", "text/plain")], body: Data(body))
        #expect(response.status == 400, "\(String(decoding: response.body, as: UTF8.self))", sourceLocation: sourceLocation)
        #expect(response.errorCode == .badRequest, sourceLocation: sourceLocation)
        #expect(response.error?.reason.contains(words) == true, "\(response.error?.reason ?? "")", sourceLocation: sourceLocation)
    }

    @Test func numbersBeyondADoublesRangeAreRefusedOnEveryPath() async throws {
        try await DatabaseFixture.run { fixture in
            let beyond = "beyond the range of a 64-bit floating-point number"
            for (index, field) in [
                #""x":{"value":1e400,"type":"DOUBLE"}"#, #""x":{"value":-1e999,"type":"DOUBLE"}"#, #""x":{"value":1e400}"#,
                #""x":{"value":[1.5,1e400],"type":"DOUBLE_LIST"}"#,
                #""x":{"value":{"latitude":1e400,"longitude":0},"type":"LOCATION"}"#,
                #""x":{"value":1e-400,"type":"INT64"}"#, #""x":{"value":2e-324,"type":"DOUBLE"}"#,
            ].enumerated() {
                for database in ["private", "public"] {
                    try await Self.expectRefused(
                        fixture, "records/modify", Data(Self.create("r\(index)", fields: field).utf8), database: database,
                        mentioning: beyond)
                }
            }
            let lookup = try await fixture.post("records/lookup", #"{"records":[{"recordName":"r0"},{"recordName":"r3"}]}"#)
            #expect(try lookup.decode(RecordsResponse.self).records.codes == [.notFound, .notFound], "nothing was stored")

            try await Self.expectRefused(
                fixture, "records/query",
                Data(
                    #"{"query":{"recordType":"Reading","filterBy":[{"fieldName":"x","comparator":"GREATER_THAN","fieldValue":{"value":1e400}}]}}"#
                        .utf8),
                mentioning: beyond)
            try await Self.expectRefused(
                fixture, "subscriptions/modify",
                Data(
                    #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"s","subscriptionType":"query","query":{"recordType":"Reading","filterBy":[{"fieldName":"x","comparator":"EQUALS","fieldValue":{"value":-1e999,"type":"DOUBLE"}}]}}}]}"#
                        .utf8),
                mentioning: beyond)
            let keyValue = try await fixture.server.request(
                .POST, "/kv/1/\(fixture.app.storeIdentifier)/modify", session: fixture.ann, apiToken: fixture.app.apiToken,
                json: #"{"operations":[{"operationType":"set","key":"k","value":{"type":"DOUBLE","value":1e400}}]}"#)
            #expect(keyValue.errorCode == .badRequest && keyValue.error?.reason.contains(beyond) == true)
        }
    }

    @Test func textThatIsNotUTF8AndRepeatedKeysAreRefused() async throws {
        try await DatabaseFixture.run { fixture in
            // Two record names that differ only in an invalid byte must not both become "a\u{FFFD}b".
            for byte: UInt8 in [0xFF, 0xC0, 0x80] {
                let body =
                    Data(#"{"operations":[{"operationType":"create","record":{"recordType":"Reading","recordName":"a"#.utf8) + [
                        byte
                    ]
                    + Data(#"b"}}]}"#.utf8)
                try await Self.expectRefused(fixture, "records/modify", body, mentioning: "not valid UTF-8")
            }
            try await Self.expectRefused(
                fixture, "records/modify", Data(Self.create("r", fields: #""s":{"value":"\udc00"}"#).utf8),
                mentioning: "surrogate")
            try await Self.expectRefused(
                fixture, "records/modify",
                Data(Self.create("r", fields: #""s":{"value":"one","type":"STRING"},"s":{"value":"two","type":"STRING"}"#).utf8),
                mentioning: #"the key "s" appears twice"#)
            try await Self.expectRefused(
                fixture, "records/lookup", Data(#"{"records":[{"recordName":"a","recordName":"b"}]}"#.utf8),
                mentioning: "appears twice")
            for number in ["+1", "01", "1.", ".5"] {
                try await Self.expectRefused(
                    fixture, "records/modify", Data(Self.create("r", fields: #""n":{"value":\#(number)}"#).utf8),
                    mentioning: "JSON")
            }
            let keyValue = try await fixture.server.request(
                .POST, "/kv/1/\(fixture.app.storeIdentifier)/modify",
                headers: [("Authorization", "Bearer \(fixture.ann.sessionToken)"), ("X-Nimbus-API-Token", fixture.app.apiToken)],
                body: Data(#"{"operations":[{"operationType":"set","key":"k"#.utf8) + [0xFE]
                    + Data(#"","value":{"type":"INT64","value":1}}]}"#.utf8))
            #expect(keyValue.errorCode == .badRequest && keyValue.error?.reason.contains("not valid UTF-8") == true)
        }
    }

    @Test func controlCharactersInIdentifiersAreRefused() async throws {
        try await DatabaseFixture.run { fixture in
            let signUp = try await fixture.server.request(
                .POST, "/auth/1/signup", json: #"{"email":"eve\u0000@example.com","password":"correct horse"}"#)
            #expect(signUp.errorCode == .badRequest)
            #expect(try await fixture.server.store.account(email: "eve\u{0}@example.com") == nil)
            let subscription = try await fixture.post(
                "subscriptions/modify",
                #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"a\u0000b","subscriptionType":"zone"}}]}"#
            )
            let answer = try subscription.decode(SubscriptionsResponse.self).subscriptions
            guard case .failure(let failure) = answer.first else { Issue.record("the subscription was saved"); return }
            #expect(failure.serverErrorCode == .badRequest && failure.reason.contains("control characters"))
            let keyValue = try await fixture.server.request(
                .POST, "/kv/1/\(fixture.app.storeIdentifier)/modify", session: fixture.ann, apiToken: fixture.app.apiToken,
                json: #"{"operations":[{"operationType":"set","key":"a\u0000b","value":{"type":"INT64","value":1}}]}"#)
            #expect(keyValue.errorCode == .badRequest && keyValue.error?.reason.contains("NUL") == true)
        }
    }

    @Test func timestampsWithAFractionOfAMillisecondAreRounded() async throws {
        try await DatabaseFixture.run { fixture in
            // Typed, and untyped once the schema knows the field is a TIMESTAMP (what `Date`'s encoding sends).
            let typed = try await fixture.modify(
                Self.create("typed", fields: #""at":{"value":1795464170588.9714,"type":"TIMESTAMP"}"#))
            #expect(typed.first?.record?.fields?["at"] == .timestamp(Date(milliseconds: 1_795_464_170_589)))
            let untyped = try await fixture.modify(Self.create("untyped", fields: #""at":{"value":1795464170588.4}"#))
            #expect(untyped.first?.record?.fields?["at"] == .timestamp(Date(milliseconds: 1_795_464_170_588)))
            let list = try await fixture.modify(
                Self.create("list", fields: #""times":{"value":[1.6,2],"type":"TIMESTAMP_LIST"}"#))
            #expect(
                list.first?.record?.fields?["times"]
                    == .list([.timestamp(Date(milliseconds: 2)), .timestamp(Date(milliseconds: 2))], elementType: "TIMESTAMP"))
            // A time far from 1970 comes back exactly as sent.
            let far = try await fixture.modify(Self.create("far", fields: #""at":{"value":4404643816985819,"type":"TIMESTAMP"}"#))
            let raw = try await fixture.post("records/lookup", #"{"records":[{"recordName":"far"}]}"#)
            #expect(far.first?.record != nil && String(decoding: raw.body, as: UTF8.self).contains("4404643816985819"))
        }
    }

    @Test func aNullValueClearsTheField() async throws {
        try await DatabaseFixture.run { fixture in
            _ = try await fixture.modify(
                Self.create("r", fields: #""a":{"value":"x"},"b":{"value":2},"c":{"value":3.5},"d":{"value":"y"}"#))
            for (clear, kept) in [
                (#""a":{"value":null}"#, ["b", "c", "d"]), (#""b":{}"#, ["c", "d"]),
                (#""c":{"value":null,"type":"DOUBLE"}"#, ["d"]), (#""d":null"#, []),
            ] {
                let update = try await fixture.modify(
                    #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"r","fields":{\#(clear)}}}]}"#)
                #expect(update.first?.record?.fields?.keys.sorted() == kept, "\(clear)")
            }
            let lookup = try await fixture.post("records/lookup", #"{"records":[{"recordName":"r"}]}"#)
            #expect(try lookup.decode(RecordsResponse.self).records.first?.record?.fields == [:])
            // A create with a null field simply lacks it.
            let created = try await fixture.modify(Self.create("n", fields: #""a":{"value":null},"b":{"value":1}"#))
            #expect(created.first?.record?.fields?.keys.sorted() == ["b"])
        }
    }

    /// A database written before non-finite numbers were refused held records no reader could decode;
    /// after the upgrade every read, change feed and write of them works.
    @Test func recordsStoredWithANullDoubleAreReadableAfterTheUpgrade() async throws {
        let directory = TestServer.temporaryDirectory()
        let app = try await DatabaseFixture.run(dataDirectory: directory) { fixture in
            _ = try await fixture.modify(
                Self.create(
                    "old",
                    fields:
                        #""x":{"value":1.5,"type":"DOUBLE"},"l":{"value":[1.5,2.5],"type":"DOUBLE_LIST"},"name":{"value":"kept"}"#
                ))
            return fixture.app
        }

        // What the release before stored for `1e400` and `[1.5, -1e999]`, and the migration not yet applied.
        let queue = try DatabaseQueue(path: directory.appendingPathComponent("nimbus.sqlite").path)
        try await queue.write { db in
            try db.execute(
                sql: """
                    UPDATE entries SET payload = CAST(replace(replace(CAST(payload AS TEXT), '"value":1.5,', '"value":null,'), '[1.5,2.5]', '[1.5,null]') AS BLOB)
                    WHERE key = 'old';
                    DELETE FROM grdb_migrations WHERE identifier = '2026-11-23-repair-non-finite-record-values';
                    """)
        }
        try await queue.close()

        let server = try await TestServer.start(dataDirectory: directory)
        let fixture = DatabaseFixture(
            server: server, app: app, ann: try await server.signIn(email: "ann@example.com", device: "laptop"))
        do {
            let lookup = try await fixture.post("records/lookup", #"{"records":[{"recordName":"old"}]}"#)
            #expect(lookup.status == 200)
            let record = try #require(try lookup.decode(RecordsResponse.self).records.first?.record)
            #expect(record.fields == ["name": .string("kept"), "l": .list([.double(1.5)], elementType: "DOUBLE")])
            let changes = try await fixture.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"}}]}"#)
            #expect(changes.status == 200 && !String(decoding: changes.body, as: UTF8.self).contains("null"))
            let query = try await fixture.post(
                "records/query",
                #"{"query":{"recordType":"Reading","filterBy":[{"fieldName":"name","comparator":"EQUALS","fieldValue":{"value":"kept"}}]}}"#
            )
            #expect(try query.decode(RecordsQueryResponse.self).records.names == ["old"])
            let update = try await fixture.modify(
                #"{"operations":[{"operationType":"update","record":{"recordName":"old","recordChangeTag":"\#(record.recordChangeTag!)","fields":{"x":{"value":2.5}}}}]}"#
            )
            #expect(update.first?.record?.fields?["x"] == .double(2.5))
            let delete = try await fixture.modify(
                #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"old"}}]}"#)
            #expect(delete.first?.record?.deleted == true)
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }
}
