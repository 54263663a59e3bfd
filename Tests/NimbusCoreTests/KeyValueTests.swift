import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

@Suite(.cleansUp) struct KeyValueCodingTests {
    static let samples: [KeyValue] = [
        .string("héllo"), .int64(.max), .int64(-3), .double(2.5), .bool(true),
        .date(Date(timeIntervalSince1970: 1_700_000_000.123)), .data(Data([0, 1, 255])),
        .array([.string("a"), .int64(1), .array([.bool(false)])]),
        .dictionary(["inner": .dictionary(["x": .double(-1)]), "list": .array([])]),
    ]

    @Test(arguments: samples)
    func everyTypeSurvivesTheWire(_ value: KeyValue) throws {
        let decoded = try JSONDecoder().decode(KeyValue.self, from: JSONEncoder().encode(value))
        #expect(decoded == value)
    }

    @Test func datesTravelAsMillisecondTimestamps() throws {
        let json = try JSONEncoder().encode(KeyValue.date(Date(timeIntervalSince1970: 1.5)))
        #expect(String(decoding: json, as: UTF8.self).contains("1500"))
        #expect(String(decoding: json, as: UTF8.self).contains("TIMESTAMP"))
    }

    @Test(arguments: [
        #"{"type":"STRING","value":3}"#, #"{"type":"INT64","value":"x"}"#, #"{"type":"WIDGET","value":1}"#,
        #"{"type":"BYTES","value":"%%%"}"#, #"{"value":1}"#, #"{"type":"INT64","value":1.5}"#,
    ])
    func malformedValuesAreRejected(_ json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(KeyValue.self, from: Data(json.utf8)) }
    }

    @Test func sizeCountsUTF8BytesAndNestedContents() {
        #expect(KeyValue.string("é").byteSize == 2)
        #expect(KeyValue.data(Data(count: 10)).byteSize == 10)
        #expect(
            KeyValue.dictionary(["ab": .int64(1), "c": .array([.bool(true), .string("xyz")])]).byteSize == 2 + 8 + 1 + 1 + 3)
    }

    @Test func nonFiniteNumbersAreNotRepresentable() {
        #expect(!KeyValue.array([.double(.nan)]).isRepresentable)
        #expect(KeyValue.double(1).isRepresentable)
    }

    @Test func operationsEncodeSetAndRemove() throws {
        let operations = [KeyValueOperation.set("a", .int64(1)), .remove("b")]
        let decoded = try JSONDecoder().decode([KeyValueOperation].self, from: JSONEncoder().encode(operations))
        #expect(decoded == operations)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(KeyValueOperation.self, from: Data(#"{"operationType":"explode","key":"a"}"#.utf8))
        }
    }
}

@Suite(.cleansUp) struct KeyValueLimitsTests {
    let limits = KeyValueLimits.iCloud

    @Test func keysOfMoreThan64BytesAreRefused() throws {
        try limits.validate([.set(String(repeating: "k", count: 64), .bool(true))])
        let error = #expect(throws: NimbusError.self) {
            try limits.validate([.set(String(repeating: "é", count: 33), .bool(true))])
        }
        #expect(error?.code == .kvLimitExceeded)
        #expect(error?.limit == "keyBytes")
    }

    @Test func valuesOfMoreThanOneMebibyteAreRefused() throws {
        try limits.validate([.set("k", .data(Data(count: 1 << 20)))])
        let error = #expect(throws: NimbusError.self) { try limits.validate([.set("k", .data(Data(count: (1 << 20) + 1)))]) }
        #expect(error?.limit == "valueBytes")
    }

    @Test func totalsAreLimitedToKeysAndBytes() throws {
        try limits.validateTotals(keys: 1024, bytes: 1 << 20)
        #expect(#expect(throws: NimbusError.self) { try limits.validateTotals(keys: 1025, bytes: 0) }?.limit == "keyCount")
        #expect(
            #expect(throws: NimbusError.self) { try limits.validateTotals(keys: 1, bytes: (1 << 20) + 1) }?.limit == "totalBytes")
    }

    @Test func emptyKeysAreBadRequests() {
        #expect(#expect(throws: NimbusError.self) { try limits.validate([.remove("")]) }?.code == .badRequest)
    }
}
