import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

/// The hand-written JSON path (the strict parser, the hand decoders and writers of records and key-value
/// batches) against Foundation's `JSONDecoder` and `JSONEncoder`, over valid bodies and bodies mangled
/// at random: both accept the same documents (the parser refuses a repeated key besides), read the same
/// values from them, and what either writer writes reads back as the value written. Seeded: a failing
/// round prints its seed and body, and repeats.
@Suite(.cleansUp) struct WireDifferentialTests {
    static let oddNumbers = [
        "1e400", "-1e999", "1e-400", "2e-324", "01", "-01", "+1", "1.", ".5", "1.0", "1e2", "1E+2", "-0", "0e-400",
        "9223372036854775807",
        "9223372036854775808", "-9223372036854775808", "1795464170588.9714", "4.9e-324", "1.7976931348623157e308",
        "1.7976931348623159e308",
        "8640000000000000", "8640000000000001", "100e-2", "0.1", "-", "1e", "1.5e+", "Infinity", "NaN",
    ]
    static let oddStrings: [[UInt8]] = [
        [0xFF], [0xC0, 0x80], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], Array(#"\u0000"#.utf8),
        Array(#"\ud800"#.utf8),
        Array(#"\udc00\ud800"#.utf8), Array(#"\ud83d\ude00"#.utf8), Array(#"\/\b\f"#.utf8), Array(#"\x"#.utf8), [0x09],
        Array("é😀".utf8),
        Array(#"\u00"#.utf8),
    ]
    static let oddValues = ["null", "{}", "[]", "true", #""x""#, "[null]", #"{"value":null}"#, "[1,\"a\"]", "{\"recordName\":5}"]

    /// A random record as a client might send it, every field type included.
    static func record(_ random: inout SeededGenerator) -> RecordWire {
        func double() -> Double {
            [0.5, -2.25, 1e-7, 1.7976931348623157e308, 5e-324, 3, -0.0][Int.random(in: 0..<7, using: &random)]
        }
        let values: [FieldValue] = [
            .string("text \"quoted\" \\ \u{1} é😀"), .int64(Int64.random(in: .min ... .max, using: &random)), .double(double()),
            .timestamp(Date(milliseconds: Int64.random(in: Date.wireMilliseconds, using: &random))), .bytes(Data([0, 255, 7])),
            .reference(RecordReference(recordName: "target", zoneID: ZoneID(zoneName: "Z"), action: .deleteSelf)),
            .location(Location(latitude: double(), longitude: -122.03)),
            .list([.string("a"), .string("")], elementType: "STRING"), .list([.int64(1), .int64(-2)], elementType: "INT64"),
            .list([.double(double())], elementType: "DOUBLE"), .list([], elementType: "TIMESTAMP"),
            .list([.timestamp(Date(milliseconds: 5))], elementType: "TIMESTAMP"),
        ]
        var fields = [String: FieldValue]()
        for index in 0..<Int.random(in: 0...6, using: &random) { fields["f\(index)"] = values.randomElement(using: &random)! }
        // Assets take the Codable path by design; a few keep it tested.
        if Int.random(in: 0..<20, using: &random) == 0 {
            fields["asset"] = .asset(AssetValue(fileChecksum: "c", size: 2, receipt: "r"))
        }
        var record = RecordWire(recordName: "r\(Int.random(in: 0...9, using: &random))", recordType: "T", fields: fields)
        if Bool.random(using: &random) { record.recordChangeTag = "1z" }
        if Bool.random(using: &random) { record.clearedFields = ["gone"] }
        if Bool.random(using: &random) { record.zoneID = ZoneID(zoneName: "Z", ownerRecordName: "_o") }
        if Bool.random(using: &random) { record.parent = RecordReference(recordName: "p") }
        return record
    }

    static func keyValue(_ random: inout SeededGenerator, depth: Int = 0) -> KeyValue {
        switch Int.random(in: 0..<(depth < 2 ? 8 : 6), using: &random) {
        case 0: .string("v\u{1}é")
        case 1: .int64(Int64.random(in: .min ... .max, using: &random))
        case 2: .double([0.1, -1e300, 5e-324][Int.random(in: 0..<3, using: &random)])
        case 3: .bool(Bool.random(using: &random))
        case 4: .date(Date(milliseconds: Int64.random(in: Date.wireMilliseconds, using: &random)))
        case 5: .data(Data([1, 2, 3]))
        case 6: .array([keyValue(&random, depth: depth + 1), keyValue(&random, depth: depth + 1)])
        default: .dictionary(["a": keyValue(&random, depth: depth + 1), "b": keyValue(&random, depth: depth + 1)])
        }
    }

    /// `body` with one or two random edits: an odd number, an odd string, an odd value, a repeated key, a
    /// truncation, a stray byte, or field types left out (as CloudKit web clients send values).
    static func mangle(_ body: [UInt8], _ random: inout SeededGenerator) -> [UInt8] {
        var bytes = body
        for _ in 0...Int.random(in: 0...1, using: &random) {
            let tokens = Self.tokens(bytes)
            switch Int.random(in: 0..<7, using: &random) {
            case 6: bytes = untyped(bytes, keeping: Int.random(in: 0...2, using: &random))
            case 0:
                guard let number = tokens.numbers.randomElement(using: &random) else { continue }
                bytes.replaceSubrange(number, with: Array(oddNumbers.randomElement(using: &random)!.utf8))
            case 1:
                guard let string = tokens.strings.randomElement(using: &random) else { continue }
                let at = Int.random(in: string.lowerBound...string.upperBound, using: &random)
                bytes.insert(contentsOf: oddStrings.randomElement(using: &random)!, at: at)
            case 2:
                guard
                    let value = (tokens.numbers + tokens.strings.map { $0.lowerBound - 1..<$0.upperBound + 1 }).randomElement(
                        using: &random)
                else { continue }
                bytes.replaceSubrange(value, with: Array(oddValues.randomElement(using: &random)!.utf8))
            case 3:
                guard let member = tokens.members.randomElement(using: &random) else { continue }
                bytes.insert(contentsOf: bytes[member] + [UInt8(ascii: ",")], at: member.lowerBound)
            case 4: bytes = Array(bytes.prefix(Int.random(in: 0..<max(1, bytes.count), using: &random)))
            default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random))
            }
        }
        return bytes
    }

    /// `json` with every object's members in key order: dictionaries are written in an order that changes
    /// from process to process, and a seeded round must mangle the same bytes every time.
    static func canonical(_ json: Data) throws -> [UInt8] {
        func sorted(_ tree: JSONTree) -> JSONTree {
            switch tree {
            case .array(let elements): .array(elements.map(sorted))
            case .object(let members): .object(members.sorted { $0.key < $1.key }.map { ($0.key, sorted($0.value)) })
            default: tree
            }
        }
        var writer = JSONWriter()
        writer.tree(sorted(try JSONTree(parsing: json)))
        return writer.bytes
    }

    /// `bytes` (canonical: a field's `type` before its `value`) without the `"type":"…",` members of field
    /// values, keeping the first `keeping` of them.
    static func untyped(_ bytes: [UInt8], keeping: Int) -> [UInt8] {
        var text = String(decoding: bytes, as: UTF8.self)
        var kept = 0
        var searchFrom = text.startIndex
        while let found = text.range(of: #"{"type":""#, range: searchFrom..<text.endIndex),
            let close = text[found.upperBound...].firstIndex(of: "\""), text[text.index(after: close)...].hasPrefix(",")
        {
            let end = text.index(after: close)
            if kept < keeping {
                kept += 1
                searchFrom = end
                continue
            }
            text.removeSubrange(text.index(after: found.lowerBound)...end)
            searchFrom = found.lowerBound
        }
        return Array(text.utf8)
    }

    /// Where the numbers and string contents of a JSON text are, and the whole `"key":value` members whose
    /// value is a scalar (a rough scan, good enough to aim edits at valid JSON).
    static func tokens(_ bytes: [UInt8]) -> (numbers: [Range<Int>], strings: [Range<Int>], members: [Range<Int>]) {
        var numbers = [Range<Int>](), strings = [Range<Int>](), members = [Range<Int>]()
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let start = index + 1
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                guard index < bytes.count else { break }
                strings.append(start..<index)
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
                    var end = index + 1
                    while end < bytes.count,
                        ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "{"), UInt8(ascii: "[")].contains(bytes[end])
                    { end += 1 }
                    if end < bytes.count, bytes[end] != UInt8(ascii: "{"), bytes[end] != UInt8(ascii: "[") {
                        members.append(start - 1..<end)
                    }
                }
            } else if byte == UInt8(ascii: "-") || (48...57).contains(byte) {
                let start = index
                while index < bytes.count, "+-.eE0123456789".utf8.contains(bytes[index]) { index += 1 }
                numbers.append(start..<index)
            } else {
                index += 1
            }
        }
        return (numbers, strings, members)
    }

    /// One body through both paths: `hand` is the hand decoder (it may decline with `UnsupportedJSON`).
    static func compare<T: Decodable & Equatable>(
        _ body: [UInt8], as type: T.Type, hand: (JSONTree) throws -> T, context: @autoclosure () -> String
    ) -> (handled: Bool, accepted: Bool) {
        let data = Data(body)
        let codable = try? JSONDecoder().decode(T.self, from: data)
        let tree: JSONTree
        do {
            tree = try JSONTree(parsing: body)
        } catch {
            // Stricter than JSONDecoder by design: a repeated key; bad text or numbers in parts JSONDecoder skips
            // without reading; and an INT64 such as 1e-400, which JSONDecoder reads as 0.
            let stricter = [
                "appears twice", "not valid UTF-8", "control character", "lone UTF-16 surrogate", "beyond the range",
                "not a JSON value",
                "leading zero", "no digits", "unknown escape", "four hex digits",
            ]
            #expect(
                codable == nil || stricter.contains { error.reason.contains($0) },
                "the parser refused what JSONDecoder read: \(error) — \(context())")
            return (false, false)
        }
        do {
            let value = try hand(tree)
            #expect(codable == value, "the hand decoder read another value than JSONDecoder — \(context())")
            return (true, true)
        } catch is UnsupportedJSON {
            return (false, codable != nil)
        } catch {
            Issue.record("the hand decoder failed with \(error) instead of declining — \(context())")
            return (false, false)
        }
    }

    @Test(arguments: [2026_11_23 as UInt64, 7, 99])
    func recordsReadTheSameThroughBothPaths(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        var (handled, accepted) = (0, 0)
        for round in 0..<1500 {
            // Long CPU work yields between rounds: the cooperative threads are every other test's too.
            await Task.yield()
            let request = RecordsModifyRequest(
                operations: (0..<Int.random(in: 1...3, using: &random)).map { _ in
                    RecordOperation(.forceUpdate, Self.record(&random))
                },
                zoneID: Bool.random(using: &random) ? ZoneID(zoneName: "Z") : nil,
                atomic: Bool.random(using: &random) ? false : nil)
            // Written by hand and by JSONEncoder, both read back as the request.
            let handWritten = try request.encoded()
            #expect(
                try JSONDecoder().decode(RecordsModifyRequest.self, from: handWritten).operations == request.operations,
                "seed \(seed) round \(round)")
            #expect(
                try RecordsModifyRequest.decode(JSONEncoder().encode(request)).operations == request.operations,
                "seed \(seed) round \(round)")
            let body = round % 4 == 0 ? Array(handWritten) : Self.mangle(try Self.canonical(handWritten), &random)
            let context = "seed \(seed) round \(round): \(String(decoding: body, as: UTF8.self).prefix(600))"
            let whole = Self.compare(
                body, as: ModifyOperations.self, hand: { ModifyOperations(try RecordsModifyRequest.byHand($0)) }, context: context
            )
            if whole.handled { handled += 1 }
            if whole.accepted { accepted += 1 }
        }
        // The comparison means something only if the hand path reads most bodies itself.
        #expect(handled * 10 > accepted * 7, "seed \(seed): the hand decoder read only \(handled) of \(accepted) bodies")
    }

    @Test(arguments: [2026_11_23 as UInt64, 11])
    func keyValueBatchesReadTheSameThroughBothPaths(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        var (handled, accepted) = (0, 0)
        for round in 0..<1500 {
            // Long CPU work yields between rounds: the cooperative threads are every other test's too.
            await Task.yield()
            let operations = (0..<Int.random(in: 1...4, using: &random)).map { index in
                Bool.random(using: &random) ? KeyValueOperation.set("k\(index)", Self.keyValue(&random)) : .remove("k\(index)")
            }
            let request = KeyValueModifyRequest(operations: operations)
            #expect(try JSONDecoder().decode(KeyValueModifyRequest.self, from: request.encoded()).operations == operations)
            let body = round % 4 == 0 ? Array(request.encoded()) : Self.mangle(try Self.canonical(request.encoded()), &random)
            let context = "seed \(seed) round \(round): \(String(decoding: body, as: UTF8.self).prefix(600))"
            let whole = Self.compare(
                body, as: KeyValueOperations.self,
                hand: { tree in
                    KeyValueOperations(operations: try KeyValueModifyRequest.byHand(tree).operations)
                }, context: context)
            if whole.handled { handled += 1 }
            if whole.accepted { accepted += 1 }
        }
        #expect(handled * 10 > accepted * 7, "seed \(seed): the hand decoder read only \(handled) of \(accepted) bodies")
    }

    /// The parts of a modify request that compare (the request itself is not `Equatable`).
    struct ModifyOperations: Decodable, Equatable {
        var operations: [RecordOperation]
        var zoneID: ZoneID?
        var atomic: Bool?
        var numbersAsStrings: Bool?

        init(_ request: RecordsModifyRequest) {
            operations = request.operations
            zoneID = request.zoneID
            atomic = request.atomic
            numbersAsStrings = request.numbersAsStrings
        }

        init(from decoder: any Decoder) throws { self.init(try RecordsModifyRequest(from: decoder)) }
    }

    struct KeyValueOperations: Decodable, Equatable {
        var operations: [KeyValueOperation]
        init(operations: [KeyValueOperation]) { self.operations = operations }
        init(from decoder: any Decoder) throws { operations = try KeyValueModifyRequest(from: decoder).operations }
    }
}
