import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// Request bodies shaped like Apple's CloudKit Web Services examples (reference §1.4–1.9), sent as a
/// CloudKit web client sends them (`text/plain` JSON, credentials in the query), with the answers read
/// as plain JSON so that every key name and value type is checked, not just what Nimbus's decoders accept.
@Suite(.cleansUp) struct CloudKitCompatibilityTests {
    typealias JSON = [String: Any]

    static func json(_ response: RawResponse) throws -> JSON {
        try #require(
            try JSONSerialization.jsonObject(with: response.body) as? JSON, "\(String(decoding: response.body, as: UTF8.self))")
    }

    /// Checks a record dictionary has CloudKit's keys with CloudKit's value types.
    static func checkRecord(_ record: JSON, type: String) throws {
        #expect(record["recordName"] is String)
        #expect(record["recordType"] as? String == type)
        #expect(record["recordChangeTag"] is String)
        let fields = try #require(record["fields"] as? JSON)
        for (_, field) in fields {
            let field = try #require(field as? JSON)
            #expect(field["type"] is String && field["value"] != nil)
        }
        for stamp in ["created", "modified"] {
            let dictionary = try #require(record[stamp] as? JSON)
            #expect(
                dictionary["timestamp"] is NSNumber && dictionary["userRecordName"] is String && dictionary["deviceID"] is String)
        }
    }

    @Test func recordsModifyQueryLookupAndChangesAnswerInCloudKitsShapes() async throws {
        let fixture = try await DatabaseFixture.make()

        // records/modify: create with fields whose types are left to the server, as Apple's examples do.
        let modify = try Self.json(
            try await fixture.post(
                "records/modify",
                #"""
                {"operations":[{"operationType":"create","record":{"recordType":"Artist","recordName":"Mei Chen",
                 "fields":{"firstName":{"value":"Mei"},"lastName":{"value":"Chen"},"born":{"value":1422312944104,"type":"TIMESTAMP"},
                 "location":{"value":{"latitude":37.33,"longitude":-122.03},"type":"LOCATION"}}}}],
                 "zoneID":{"zoneName":"_defaultZone"},"atomic":true}
                """#))
        let records = try #require(modify["records"] as? [JSON])
        try Self.checkRecord(records[0], type: "Artist")
        let fields = try #require(records[0]["fields"] as? JSON)
        #expect((fields["firstName"] as? JSON)?["type"] as? String == "STRING")
        #expect(((fields["born"] as? JSON)?["value"] as? NSNumber)?.int64Value == 1422312944104)
        let zoneID = try #require(records[0]["zoneID"] as? JSON)
        #expect(zoneID["zoneName"] as? String == "_defaultZone" && zoneID["ownerRecordName"] is String)

        // records/query with a system-field filter and a sort, as in the reference's example, once the
        // schema indexes the system field, as CloudKit's needs to.
        let caller = try #require((records[0]["created"] as? JSON)?["userRecordName"] as? String)
        try await fixture.server.indexSystemFields(["___createdBy"], of: "Artist", container: fixture.app.container)
        let query = try Self.json(
            try await fixture.post(
                "records/query",
                #"""
                {"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":100,"desiredKeys":["firstName"],
                 "query":{"recordType":"Artist",
                  "filterBy":[{"systemFieldName":"createdUserRecordName","comparator":"EQUALS","fieldValue":{"value":{"recordName":"\#(caller)"},"type":"REFERENCE"}}],
                  "sortBy":[{"fieldName":"lastName","ascending":false}]},
                 "continuationMarker":null}
                """#))
        let found = try #require(query["records"] as? [JSON])
        #expect(found.count == 1 && (found[0]["fields"] as? JSON)?.keys.sorted() == ["firstName"])

        // A per-item failure: HTTP 200, with CloudKit's error keys in the item.
        let exists = try await fixture.post(
            "records/modify",
            #"{"operations":[{"operationType":"create","record":{"recordType":"Artist","recordName":"Mei Chen"}}]}"#)
        #expect(exists.status == 200)
        let failure = try #require((try Self.json(exists)["records"] as? [JSON])?.first)
        #expect(failure["serverErrorCode"] as? String == "EXISTS" && failure["reason"] is String && failure["uuid"] is String)
        #expect(failure["recordName"] as? String == "Mei Chen")

        // records/lookup and changes/zone.
        let lookup = try Self.json(try await fixture.post("records/lookup", #"{"records":[{"recordName":"Mei Chen"}]}"#))
        try Self.checkRecord(try #require((lookup["records"] as? [JSON])?.first), type: "Artist")
        let changes = try Self.json(
            try await fixture.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"}}]}"#))
        let zone = try #require((changes["zones"] as? [JSON])?.first)
        #expect(zone["syncToken"] is String && zone["moreComing"] is Bool && zone["zoneID"] is JSON && zone["records"] is [JSON])

        // A top-level error: CloudKit's status and keys.
        let bad = try await fixture.post("records/query", #"{"query":{}}"#)
        #expect(bad.status == 400)
        let error = try Self.json(bad)
        #expect(error["serverErrorCode"] as? String == "BAD_REQUEST" && error["reason"] is String && error["uuid"] is String)
    }

    @Test func numbersAsStringsSendsAndTakesINT64ValuesAsStrings() async throws {
        let fixture = try await DatabaseFixture.make()
        _ = try await fixture.post("zones/modify", #"{"operations":[\#(ZoneAndChangeTests.zoneOperation("create", "Z"))]}"#)
        // Past 2^53, where a JavaScript number would lose digits.
        let big = "9007199254740993"
        func int64(_ record: JSON?, _ field: String = "count") -> Any? {
            ((record?["fields"] as? JSON)?[field] as? JSON)?["value"]
        }
        let modify = try Self.json(
            try await fixture.post(
                "records/modify",
                #"{"operations":[{"operationType":"create","record":{"recordType":"Counters","recordName":"c","fields":{"count":{"value":"\#(big)","type":"INT64"},"ratio":{"value":0.5},"steps":{"value":["1","2"],"type":"INT64_LIST"}}}}],"zoneID":{"zoneName":"Z"},"numbersAsStrings":true}"#
            ))
        let saved = (modify["records"] as? [JSON])?.first
        #expect(int64(saved) as? String == big)
        #expect(int64(saved, "steps") as? [String] == ["1", "2"])
        #expect((int64(saved, "ratio") as? NSNumber)?.doubleValue == 0.5, "only INT64 values become strings")
        let zone = #""zoneID":{"zoneName":"Z"}"#
        let lookup = try Self.json(
            try await fixture.post("records/lookup", #"{"records":[{"recordName":"c"}],\#(zone),"numbersAsStrings":true}"#))
        #expect(int64((lookup["records"] as? [JSON])?.first) as? String == big)
        let query = try Self.json(
            try await fixture.post("records/query", #"{"query":{"recordType":"Counters"},\#(zone),"numbersAsStrings":true}"#))
        #expect(int64((query["records"] as? [JSON])?.first) as? String == big)
        let changes = try Self.json(try await fixture.post("changes/zone", #"{"zones":[{\#(zone)}],"numberAsStrings":true}"#))
        let changed = ((changes["zones"] as? [JSON])?.first?["records"] as? [JSON])?.first
        #expect(int64(changed) as? String == big)
        // Without the flag, numbers stay numbers (and the stored value is exact).
        let plain = try Self.json(try await fixture.post("records/lookup", #"{"records":[{"recordName":"c"}],\#(zone)}"#))
        #expect((int64((plain["records"] as? [JSON])?.first) as? NSNumber)?.int64Value == 9_007_199_254_740_993)
        // A conflict's server record too.
        let conflict = try Self.json(
            try await fixture.post(
                "records/modify",
                #"{"operations":[{"operationType":"update","record":{"recordName":"c","recordChangeTag":"stale","fields":{}}}],\#(zone),"numbersAsStrings":true}"#
            ))
        let failure = (conflict["records"] as? [JSON])?.first
        #expect(
            failure?["serverErrorCode"] as? String == "CONFLICT" && failure?["uuid"] is String
                && failure?["recordName"] as? String == "c")
        #expect(int64(failure?["serverRecord"] as? JSON) as? String == big)
        let notANumber = try await fixture.post(
            "records/modify",
            #"{"operations":[{"operationType":"create","record":{"recordType":"Counters","fields":{"count":{"value":"many","type":"INT64"}}}}],\#(zone)}"#
        )
        #expect(notANumber.errorCode == .badRequest)
    }

    @Test func zonesAndDatabaseChangesAnswerInCloudKitsShapes() async throws {
        let fixture = try await DatabaseFixture.make()
        let created = try Self.json(
            try await fixture.post(
                "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"myCustomZone"}}}]}"#))
        let zone = try #require((created["zones"] as? [JSON])?.first)
        #expect((zone["zoneID"] as? JSON)?["zoneName"] as? String == "myCustomZone")
        let listed = try Self.json(try await fixture.get("zones/list"))
        let zones = try #require(listed["zones"] as? [JSON])
        #expect(zones.contains { ($0["zoneID"] as? JSON)?["zoneName"] as? String == "_defaultZone" })
        let database = try Self.json(try await fixture.post("changes/database", "{}"))
        #expect(database["syncToken"] is String && database["moreComing"] is Bool && database["zones"] is [JSON])
        let caller = try Self.json(try await fixture.get("users/caller"))
        #expect(((caller["users"] as? [JSON])?.first?["userRecordName"] as? String)?.hasPrefix("_") == true)
    }
}
