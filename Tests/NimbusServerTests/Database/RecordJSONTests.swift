import Foundation
import NimbusCore
import NimbusStore
import NimbusTestingCore
import Testing

@testable import NimbusServer

/// Spliced records must read exactly as coded ones: same record, whatever the text holds.
@Suite(.cleansUp) struct RecordJSONTests {
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
        try json.records([try OutgoingRecord.make(entry, zoneID: zoneID, desiredKeys: nil, numbersAsStrings: false, links: links)]
        )
        let spliced = try JSONDecoder().decode([RecordWire].self, from: Data(json.bytes))
        #expect(spliced == [record.wire(name: name, sequence: 1234, zoneID: zoneID, desiredKeys: nil)])

        // desiredKeys, assets and shares take the coded path.
        guard
            case .wire(let partial) = try OutgoingRecord.make(
                entry, zoneID: zoneID, desiredKeys: ["number"], numbersAsStrings: false, links: links)
        else {
            Issue.record("desiredKeys must be coded")
            return
        }
        #expect(partial.fields?.keys.sorted() == ["number"])
        // numbersAsStrings: INT64 values go out as strings, and read back as the same numbers.
        var strings = JSONWriter(numbersAsStrings: true)
        try strings.records([
            try OutgoingRecord.make(entry, zoneID: zoneID, desiredKeys: nil, numbersAsStrings: true, links: links)
        ])
        #expect(String(decoding: strings.bytes, as: UTF8.self).contains(#"{"value":"-7","type":"INT64"}"#))
        #expect(try JSONDecoder().decode([RecordWire].self, from: Data(strings.bytes)) == spliced)
        var withAsset = record
        withAsset.fields["photo"] = .asset(AssetValue(fileChecksum: "c", size: 1, assetID: String(repeating: "a", count: 64)))
        #expect(!StoredRecord.isSpliceable(try withAsset.encoded()))
    }

    /// The byte search that decides splicing finds a word wherever Foundation's search does: at the start,
    /// at the end, after a partial match, and nowhere in texts too short to hold it.
    @Test func theSpliceCheckFindsWordsWhereFoundationDoes() {
        // Texts made of pieces of the words (and the words whole), so partial and overlapping matches abound.
        let pieces = ["\"sha", "re", "\"share", "\"", "ASSE", "TID", "ASSETID", "AS", "x", "s"].map { Array($0.utf8) }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func nextPiece() -> [UInt8] {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return pieces[Int(state >> 33) % pieces.count]
        }
        var found = 0
        for count in 0...8 {
            for _ in 0..<300 {
                let text = Data((0..<count).flatMap { _ in nextPiece() })
                for word in ["\"share", "ASSETID"] {
                    let expected = text.range(of: Data(word.utf8)) != nil
                    let actual =
                        word == "ASSETID" ? StoredRecord.contains(text, "ASSETID") : StoredRecord.contains(text, "\"share")
                    #expect(actual == expected, "\(String(decoding: text, as: UTF8.self)) / \(word)")
                    if expected { found += 1 }
                }
            }
        }
        #expect(found > 500)
        #expect(StoredRecord.contains(Data("ASSETID".utf8), "ASSETID"))
        #expect(StoredRecord.contains(Data("xxASSETID".utf8), "ASSETID"))
        #expect(!StoredRecord.contains(Data("ASSETI".utf8), "ASSETID"))
        #expect(!StoredRecord.contains(Data("AASSETIDD".utf8).dropFirst(2).dropLast(2), "ASSETID"))
    }
}
