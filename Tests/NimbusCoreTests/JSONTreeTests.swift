import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

/// The hand decoder must read records exactly as `JSONDecoder` does, and refuse what JSON forbids.
@Suite(.cleansUp) struct JSONTreeTests {
    @Test func recordsDecodeAsWithCodable() throws {
        var record = RecordWire(
            recordName: "r \"1\" \u{2603} \u{1F600}", recordType: "Items", recordChangeTag: "1z",
            fields: [
                "s": .string("tab\tquote\"slash\\/newline\n\u{1}☕️"), "i": .int64(Int64.max), "n": .int64(-3),
                "d": .double(1.5e-7),
                "t": .timestamp(Date(milliseconds: 1_700_000_000_123)), "b": .bytes(Data([0, 1, 255])),
                "r": .reference(RecordReference(recordName: "x", zoneID: ZoneID(zoneName: "Z"), action: .deleteSelf)),
                "l": .location(Location(latitude: -33.86, longitude: 151.2)),
                "sl": .list([.string("a"), .string("b")], elementType: "STRING"), "il": .list([], elementType: "INT64"),
                "ll": .list([.location(Location(latitude: 1, longitude: 2))], elementType: "LOCATION"),
            ], zoneID: ZoneID(zoneName: "Z", ownerRecordName: "_o"))
        record.created = .init(timestamp: 1, userRecordName: "_u", deviceID: "d")
        record.modified = .init(timestamp: 2, userRecordName: "_v", deviceID: "e")
        record.parent = RecordReference(recordName: "p")
        let tombstone = RecordWire(recordName: "gone", zoneID: ZoneID(zoneName: "Z")).with(deleted: true)
        let response = ZoneChangesResponse(zones: [
            ZoneChanges(zoneID: ZoneID(zoneName: "Z"), records: [record, tombstone], syncToken: "t", moreComing: true)
        ])
        let data = try JSONEncoder().encode(response)
        let fast = try ZoneChangesResponse.decode(data)
        #expect(fast.zones.first?.records == [record, tombstone])
        #expect(
            fast.zones.first?.records == (try JSONDecoder().decode(ZoneChangesResponse.self, from: data)).zones.first?.records)
        #expect(fast.zones.first?.syncToken == "t" && fast.zones.first?.moreComing == true)
    }

    @Test func handWrittenRecordsAndRequestsReadBackAsCodableOnes() throws {
        var record = RecordWire(
            recordName: "n\u{0}\"", recordType: "T", recordChangeTag: "a",
            fields: [
                "s": .string("\\ \n ☕️"), "d": .double(-0.000001), "big": .double(1e300), "whole": .double(3),
                "a": .asset(AssetValue(fileChecksum: "c", size: 2, receipt: "r")),
                "rl": .list([.reference(RecordReference(recordName: "x", action: .validate))], elementType: "REFERENCE"),
                "tl": .list([.timestamp(Date(milliseconds: 5))], elementType: "TIMESTAMP"),
            ], zoneID: ZoneID(zoneName: "Z"))
        record.parent = RecordReference(recordName: "p", zoneID: ZoneID(zoneName: "Z", ownerRecordName: "_o"))
        var json = JSONWriter()
        try record.write(to: &json)
        #expect(try JSONDecoder().decode(RecordWire.self, from: Data(json.bytes)) == record)

        var request = RecordsModifyRequest(
            operations: [RecordOperation(.create, record), RecordOperation(.forceDelete, RecordWire(recordName: "gone"))],
            zoneID: ZoneID(zoneName: "Z"), atomic: false)
        let data = try request.encoded()
        let codable = try JSONDecoder().decode(RecordsModifyRequest.self, from: data)
        let hand = try RecordsModifyRequest.decode(data)
        #expect(hand.operations == codable.operations && hand.operations == request.operations)
        #expect(hand.zoneID == codable.zoneID && hand.atomic == false)
        request.operations[0].record.fields = ["plain": .string("x")]
        let fast = try RecordsModifyRequest.decode(try request.encoded())
        #expect(fast.operations == request.operations)
        #expect(throws: DecodingError.self) {
            _ = try RecordsModifyRequest.decode(Data(#"{"operations":[{"operationType":"nope","record":{}}]}"#.utf8))
        }
    }

    @Test func malformedJSONIsRefused() throws {
        for text in ["", "{", "[1,]", "{\"a\":}", "\"\u{1}\"", "tru", "{\"a\" 1}", "[1 2]", "\"\\x\"", "01a", "{}x"] {
            #expect(throws: JSONTree.ParseError.self, "\(text)") { _ = try JSONTree(parsing: Array(text.utf8)) }
        }
        #expect(
            try JSONTree(parsing: Array(#" {"a":[true,false,null,-1.5e3,"\u00e9\ud83d\ude00"]} "#.utf8))["a"]
                == .array([.bool(true), .bool(false), .null, .number("-1.5e3"), .string("é😀")]))
    }
}

extension RecordWire {
    func with(deleted: Bool) -> RecordWire {
        var copy = self
        copy.deleted = deleted
        return copy
    }
}
