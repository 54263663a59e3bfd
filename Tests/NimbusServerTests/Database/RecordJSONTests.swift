import Foundation
import NimbusCore
import NimbusStore
import Testing

@testable import NimbusServer

/// Spliced records must read exactly as coded ones: same record, whatever the text holds.
@Suite struct RecordJSONTests {
    @Test func aSplicedRecordDecodesToTheCodedOne() throws {
        let stamp = RecordWire.Stamp(timestamp: 1_700_000_000_000, userRecordName: "_abc", deviceID: "d\"1")
        let record = StoredRecord(
            recordType: "Items",
            fields: [
                "name": .string("quote \" backslash \\ newline \n tab \t ☕️ \u{1}"), "number": .int64(-7),
                "tags": .list([.string("a"), .string("b")], elementType: "STRING"),
                "where": .location(Location(latitude: 1.5, longitude: -2.25)),
            ], created: stamp, modified: stamp, parent: RecordReference(recordName: "root", action: RecordReference.Action.none))
        let payload = try record.encoded()
        #expect(StoredRecord.isSpliceable(payload))
        let zoneID = ZoneID(zoneName: "Z", ownerRecordName: "_owner")
        let name = "name with \"quotes\" and \u{7}"
        let entry = Entry(key: name, payload: payload, sequence: 1234)
        let links = AssetLinks(baseURL: "http://h", key: [1, 2, 3], now: Date())

        var json = JSONWriter()
        try json.records([try OutgoingRecord.make(entry, zoneID: zoneID, desiredKeys: nil, numbersAsStrings: false, links: links)])
        let spliced = try JSONDecoder().decode([RecordWire].self, from: Data(json.bytes))
        #expect(spliced == [record.wire(name: name, sequence: 1234, zoneID: zoneID, desiredKeys: nil)])

        // desiredKeys, assets and shares take the coded path.
        guard case .wire(let partial) = try OutgoingRecord.make(entry, zoneID: zoneID, desiredKeys: ["number"], numbersAsStrings: false, links: links)
        else {
            Issue.record("desiredKeys must be coded")
            return
        }
        #expect(partial.fields?.keys.sorted() == ["number"])
        // numbersAsStrings: INT64 values go out as strings, and read back as the same numbers.
        var strings = JSONWriter(numbersAsStrings: true)
        try strings.records([try OutgoingRecord.make(entry, zoneID: zoneID, desiredKeys: nil, numbersAsStrings: true, links: links)])
        #expect(String(decoding: strings.bytes, as: UTF8.self).contains(#"{"value":"-7","type":"INT64"}"#))
        #expect(try JSONDecoder().decode([RecordWire].self, from: Data(strings.bytes)) == spliced)
        var withAsset = record
        withAsset.fields["photo"] = .asset(AssetValue(fileChecksum: "c", size: 1, assetID: String(repeating: "a", count: 64)))
        #expect(!StoredRecord.isSpliceable(try withAsset.encoded()))
    }
}
