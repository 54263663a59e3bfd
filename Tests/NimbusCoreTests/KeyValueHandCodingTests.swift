import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

/// Key-value batches are coded by hand on the hot path; they must read and write exactly what the
/// `Codable` coding does, so stored values, older devices and other clients keep working.
@Suite(.cleansUp) struct KeyValueHandCodingTests {
    static let samples: [KeyValue] =
        KeyValueCodingTests.samples + [
            .string("quote \" backslash \\ control \u{1} newline \n ☕️"), .string(""), .int64(.min), .int64(0),
            .double(0.1), .double(-0.0), .double(1e-7), .double(1.7976931348623157e308), .double(5e-324),
            .date(Date(milliseconds: -1)), .data(Data()), .array([]), .dictionary([:]),
            .dictionary(["é": .array([.dictionary(["k": .data(Data([9]))])]), "": .bool(false)]),
        ]

    @Test(arguments: samples)
    func handWrittenValuesReadTheSameEitherWay(_ value: KeyValue) throws {
        #expect(try KeyValue(tree: JSONTree(parsing: value.encoded())) == value)
        #expect(try JSONDecoder().decode(KeyValue.self, from: value.encoded()) == value)
        #expect(try KeyValue.decode(JSONEncoder().encode(value)) == value)
    }

    @Test func batchesReadTheSameEitherWay() throws {
        let operations =
            Self.samples.enumerated().map { KeyValueOperation.set("key\($0.offset)", $0.element) } + [.remove("gone")]
        let request = KeyValueModifyRequest(operations: operations)
        #expect(try KeyValueModifyRequest.decode(request.encoded()).operations == operations)
        #expect(try JSONDecoder().decode(KeyValueModifyRequest.self, from: request.encoded()).operations == operations)
        #expect(try KeyValueModifyRequest.decode(JSONEncoder().encode(request)).operations == operations)

        let answer = KeyValueModifyResponse(syncToken: "bjEuNy40Mg", sequence: 42)
        let decoded = try JSONDecoder().decode(KeyValueModifyResponse.self, from: Data(answer.encoded()))
        #expect(decoded.syncToken == answer.syncToken && decoded.sequence == answer.sequence)
        let handDecoded = try KeyValueModifyResponse.decode(JSONEncoder().encode(answer))
        #expect(handDecoded.syncToken == answer.syncToken && handDecoded.sequence == answer.sequence)
    }

    /// What the hand decoder does not take goes to `JSONDecoder`, which accepts or refuses it as before:
    /// unknown members are ignored, a removal's value is ignored, and bad input is the same `DecodingError`.
    @Test(arguments: [
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"INT64","value":1}}],"extra":1}"#,
        #"{"operations":[{"operationType":"remove","key":"k","value":{"type":"WIDGET"}}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"INT64","value":1,"note":"x"}}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"DOUBLE","value":3}}]}"#,
    ])
    func whatCodableAcceptsIsAccepted(_ json: String) throws {
        let expected = try JSONDecoder().decode(KeyValueModifyRequest.self, from: Data(json.utf8)).operations
        #expect(try KeyValueModifyRequest.decode(Data(json.utf8)).operations == expected)
    }

    @Test(arguments: [
        #"{"operations":[{"operationType":"frob","key":"k"}]}"#, #"{"operations":[{"operationType":"set","key":"k"}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":null}]}"#, #"{"operations":[{"key":"k"}]}"#,
        #"{"operations":[{"operationType":"set","key":7,"value":{"type":"INT64","value":1}}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"INT64","value":1.5}}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"BYTES","value":"%%%"}}]}"#,
        #"{"operations":[{"operationType":"set","key":"k","value":{"type":"DOUBLE","value":1e999}}]}"#,
        #"{"operations":{}}"#, #"{}"#, #"[]"#,
    ])
    func whatCodableRefusesIsRefusedAlike(_ json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(KeyValueModifyRequest.self, from: Data(json.utf8)) }
        #expect(throws: DecodingError.self) { try KeyValueModifyRequest.decode(Data(json.utf8)) }
    }
}
