import Foundation

/// JSON written piece by piece: literal structure, escaped strings, numbers, and small values through
/// `JSONEncoder`. The hot wire types (records) write themselves with it, which costs a fraction of
/// `Codable` encoding.
package struct JSONWriter {
    package private(set) var bytes = [UInt8]()
    /// Writes INT64 field values as strings, for clients that ask (`numbersAsStrings`; JavaScript loses
    /// integers past 2^53).
    package let numbersAsStrings: Bool
    private let encoder = JSONEncoder()

    package init(numbersAsStrings: Bool = false) {
        self.numbersAsStrings = numbersAsStrings
        bytes.reserveCapacity(64 << 10)
    }

    package mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    package mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [92, 117, 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xf)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func value(_ value: some Encodable) throws {
        bytes.append(contentsOf: try encoder.encode(value))
    }

    package mutating func bool(_ value: Bool) { value ? raw("true") : raw("false") }

    package mutating func int(_ value: Int64) { bytes.append(contentsOf: String(value).utf8) }

    /// A finite double (JSON has no others; callers refuse non-finite values before).
    package mutating func double(_ value: Double) {
        value.isFinite ? bytes.append(contentsOf: "\(value)".utf8) : raw("null")
    }

    /// Bytes that are already JSON.
    package mutating func append(json: some Sequence<UInt8>) { bytes.append(contentsOf: json) }
}

extension JSONWriter {
    /// A parsed document written back out: members in their order, numbers as their text.
    package mutating func tree(_ tree: JSONTree) {
        switch tree {
        case .null: raw("null")
        case .bool(let value): bool(value)
        case .number(let text): bytes.append(contentsOf: text.utf8)
        case .string(let text): string(text)
        case .array(let elements):
            raw("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { raw(",") }
                self.tree(element)
            }
            raw("]")
        case .object(let members):
            raw("{")
            for (index, member) in members.enumerated() {
                if index > 0 { raw(",") }
                string(member.key)
                raw(":")
                self.tree(member.value)
            }
            raw("}")
        }
    }
}
