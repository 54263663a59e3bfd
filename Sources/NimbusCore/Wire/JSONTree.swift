/// A parsed JSON document, for decoding the hottest wire types (records in bulk) by hand: Foundation's
/// `JSONDecoder` builds a dictionary per keyed container, which made record decoding most of a client's
/// work. Objects keep their members in order; lookups are linear, which is faster for records' few keys.
public indirect enum JSONTree: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's text, read as an integer or a double on demand (64-bit integers stay exact).
    case number(String)
    case string(String)
    case array([JSONTree])
    case object([(key: String, value: JSONTree)])

    public static func == (a: JSONTree, b: JSONTree) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.object(let x), .object(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public var offset: Int
        public var description: String { "malformed JSON at byte \(offset)" }
    }

    public init(parsing bytes: some Collection<UInt8>) throws(ParseError) {
        var parser = Parser(bytes: Array(bytes))
        self = try parser.document()
    }

    public subscript(key: String) -> JSONTree? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var string: String? { if case .string(let value) = self { value } else { nil } }
    public var int64: Int64? { if case .number(let text) = self { Int64(text) } else { nil } }
    public var double: Double? { if case .number(let text) = self { Double(text) } else { nil } }
    public var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    public var array: [JSONTree]? { if case .array(let value) = self { value } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }

    struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func document() throws(ParseError) -> JSONTree {
            let value = try self.value(depth: 0)
            skipWhitespace()
            guard index == bytes.count else { throw ParseError(offset: index) }
            return value
        }

        mutating func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> JSONTree {
            guard depth < 512 else { throw ParseError(offset: index) }
            skipWhitespace()
            guard index < bytes.count else { throw ParseError(offset: index) }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var members = [(key: String, value: JSONTree)]()
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                }
                while true {
                    skipWhitespace()
                    let key = try string()
                    skipWhitespace()
                    try expect(UInt8(ascii: ":"))
                    members.append((key, try value(depth: depth + 1)))
                    skipWhitespace()
                    if try separator(closing: UInt8(ascii: "}")) { return .object(members) }
                }
            case UInt8(ascii: "["):
                index += 1
                var elements = [JSONTree]()
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
                while true {
                    elements.append(try value(depth: depth + 1))
                    skipWhitespace()
                    if try separator(closing: UInt8(ascii: "]")) { return .array(elements) }
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return .number(try number())
            }
        }

        /// After a member or element: `,` continues, `closing` ends.
        mutating func separator(closing: UInt8) throws(ParseError) -> Bool {
            guard index < bytes.count else { throw ParseError(offset: index) }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                return false
            }
            try expect(closing)
            return true
        }

        mutating func expect(_ byte: UInt8) throws(ParseError) {
            guard index < bytes.count, bytes[index] == byte else { throw ParseError(offset: index) }
            index += 1
        }

        mutating func literal(_ text: StaticString) throws(ParseError) {
            for byte in UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount) { try expect(byte) }
        }

        mutating func number() throws(ParseError) -> String {
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                guard (48...57).contains(byte) || byte == 43 || byte == 45 || byte == 46 || byte == 69 || byte == 101 else { break }
                index += 1
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard index > start, Double(text) != nil else { throw ParseError(offset: start) }
            return text
        }

        mutating func string() throws(ParseError) -> String {
            try expect(UInt8(ascii: "\""))
            let start = index
            // The common case, no escapes: one copy of the bytes.
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
                guard bytes[index] >= 0x20 else { throw ParseError(offset: index) }
                index += 1
            }
            guard index < bytes.count else { throw ParseError(offset: index) }
            if bytes[index] == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: bytes[start..<index - 1], as: UTF8.self)
            }
            var scalars = String(decoding: bytes[start..<index], as: UTF8.self).unicodeScalars
            var pending = [UInt8]()
            func flush() {
                if !pending.isEmpty { scalars.append(contentsOf: String(decoding: pending, as: UTF8.self).unicodeScalars) }
                pending.removeAll()
            }
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw ParseError(offset: index) }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): pending.append(escape)
                    case UInt8(ascii: "b"): pending.append(0x08)
                    case UInt8(ascii: "f"): pending.append(0x0C)
                    case UInt8(ascii: "n"): pending.append(0x0A)
                    case UInt8(ascii: "r"): pending.append(0x0D)
                    case UInt8(ascii: "t"): pending.append(0x09)
                    case UInt8(ascii: "u"):
                        flush()
                        var code = try hex4()
                        if (0xD800..<0xDC00).contains(code) {
                            try expect(UInt8(ascii: "\\"))
                            try expect(UInt8(ascii: "u"))
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw ParseError(offset: index) }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw ParseError(offset: index) }
                        scalars.append(scalar)
                    default: throw ParseError(offset: index - 1)
                    }
                default:
                    guard byte >= 0x20 else { throw ParseError(offset: index - 1) }
                    pending.append(byte)
                }
            }
            throw ParseError(offset: index)
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw ParseError(offset: index) }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt32
                switch byte {
                case 48...57: digit = UInt32(byte - 48)
                case 65...70: digit = UInt32(byte - 55)
                case 97...102: digit = UInt32(byte - 87)
                default: throw ParseError(offset: index)
                }
                value = value * 16 + digit
            }
            index += 4
            return value
        }
    }
}
