/// A parsed JSON document, for decoding the hottest wire types (records in bulk) by hand: Foundation's
/// `JSONDecoder` builds a dictionary per keyed container, which made record decoding most of a client's
/// work. Objects keep their members in order; lookups are linear, which is faster for records' few keys.
package indirect enum JSONTree: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's text, read as an integer or a double on demand (64-bit integers stay exact).
    case number(String)
    case string(String)
    case array([JSONTree])
    case object([(key: String, value: JSONTree)])

    package static func == (a: JSONTree, b: JSONTree) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.object(let x), .object(let y)):
            x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// Why a document is not JSON, and where. The parser is strict where `JSONDecoder` is (numbers in
    /// JSON's grammar and within a Double's range, valid UTF-8, no lone surrogates) and stricter in one
    /// place: an object may not name a key twice, since two readers could disagree on which one counts.
    package struct ParseError: Error, Sendable, CustomStringConvertible {
        package var offset: Int
        package var reason: String
        package var description: String { "malformed JSON at byte \(offset): \(reason)" }

        init(offset: Int, _ reason: String) {
            self.offset = offset
            self.reason = reason
        }
    }

    package init(parsing bytes: some Collection<UInt8>) throws(ParseError) {
        var parser = Parser(bytes: Array(bytes))
        self = try parser.document()
    }

    package subscript(key: String) -> JSONTree? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    package var string: String? { if case .string(let value) = self { value } else { nil } }
    package var int64: Int64? { if case .number(let text) = self { Int64(text) } else { nil } }
    package var double: Double? { if case .number(let text) = self { Double(text) } else { nil } }
    package var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    package var array: [JSONTree]? { if case .array(let value) = self { value } else { nil } }
    package var object: [(key: String, value: JSONTree)]? { if case .object(let members) = self { members } else { nil } }
    package var isNull: Bool { if case .null = self { true } else { false } }

    struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func document() throws(ParseError) -> JSONTree {
            // A UTF-8 byte order mark is allowed before the document, as `JSONDecoder` allows it.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
            let value = try self.value(depth: 0)
            skipWhitespace()
            guard index == bytes.count else { throw ParseError(offset: index, "text after the document") }
            return value
        }

        mutating func skipWhitespace() {
            while index < bytes.count,
                bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09
            {
                index += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> JSONTree {
            guard depth < 512 else { throw ParseError(offset: index, "nested more than 512 levels deep") }
            skipWhitespace()
            guard index < bytes.count else { throw ParseError(offset: index, "the document ends where a value should be") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
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

        mutating func object(depth: Int) throws(ParseError) -> JSONTree {
            index += 1
            var members = [(key: String, value: JSONTree)]()
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            // Small objects (most of them) look for a repeated key among their members; large ones keep a set.
            var keys = Set<String>()
            while true {
                skipWhitespace()
                let keyOffset = index
                let key = try string()
                if members.count < 16 {
                    if members.contains(where: { $0.key == key }) {
                        throw ParseError(offset: keyOffset, "the key \"\(key)\" appears twice")
                    }
                } else {
                    if keys.isEmpty { keys = Set(members.map(\.key)) }
                    guard keys.insert(key).inserted else {
                        throw ParseError(offset: keyOffset, "the key \"\(key)\" appears twice")
                    }
                }
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "a colon after the key")
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                if try separator(closing: UInt8(ascii: "}")) { return .object(members) }
            }
        }

        /// After a member or element: `,` continues, `closing` ends.
        mutating func separator(closing: UInt8) throws(ParseError) -> Bool {
            guard index < bytes.count else { throw ParseError(offset: index, "the document ends inside a container") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                return false
            }
            try expect(closing, "a comma or \"\(Character(Unicode.Scalar(closing)))\"")
            return true
        }

        mutating func expect(_ byte: UInt8, _ what: @autoclosure () -> String) throws(ParseError) {
            guard index < bytes.count, bytes[index] == byte else { throw ParseError(offset: index, "expected \(what())") }
            index += 1
        }

        mutating func literal(_ text: StaticString) throws(ParseError) {
            let start = index
            for byte in UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount) {
                guard index < bytes.count, bytes[index] == byte else { throw ParseError(offset: start, "not a JSON value") }
                index += 1
            }
        }

        /// A number in JSON's grammar (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`) whose value a Double
        /// holds: one beyond its range (`1e400`), or too small to be told from zero (`1e-400`), is refused,
        /// as `JSONDecoder` refuses it, rather than read as infinity or zero.
        mutating func number() throws(ParseError) -> String {
            let start = index
            func digits(_ parser: inout Parser) -> Int {
                let first = parser.index
                while parser.index < parser.bytes.count, (48...57).contains(parser.bytes[parser.index]) { parser.index += 1 }
                return parser.index - first
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let integerStart = index
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw ParseError(offset: start, "not a JSON value") }
            guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
                throw ParseError(offset: start, "a number with a leading zero")
            }
            var significant = bytes[integerStart..<index].contains { $0 != UInt8(ascii: "0") }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                let fractionStart = index
                guard digits(&self) > 0 else { throw ParseError(offset: index, "a number with no digits after its point") }
                significant = significant || bytes[fractionStart..<index].contains { $0 != UInt8(ascii: "0") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw ParseError(offset: index, "a number with no digits in its exponent") }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard let value = Double(text), value.isFinite, value != 0 || !significant else {
                throw ParseError(
                    offset: start, "the number \(text.prefix(40)) is beyond the range of a 64-bit floating-point number")
            }
            return text
        }

        mutating func string() throws(ParseError) -> String {
            try expect(UInt8(ascii: "\""), "a string")
            let start = index
            // The common case, no escapes: one copy of the bytes.
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
                guard bytes[index] >= 0x20 else { throw ParseError(offset: index, "a control character inside a string") }
                index += 1
            }
            guard index < bytes.count else { throw ParseError(offset: index, "the document ends inside a string") }
            if bytes[index] == UInt8(ascii: "\"") {
                index += 1
                return try text(start..<index - 1)
            }
            var scalars = try text(start..<index).unicodeScalars
            var pendingStart = index
            func flush(_ parser: Parser, upTo end: Int) throws(ParseError) {
                if pendingStart < end { scalars.append(contentsOf: try parser.text(pendingStart..<end).unicodeScalars) }
            }
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    try flush(self, upTo: index)
                    index += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    try flush(self, upTo: index)
                    index += 1
                    guard index < bytes.count else { throw ParseError(offset: index, "the document ends inside a string") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escape))
                    case UInt8(ascii: "b"): scalars.append("\u{8}")
                    case UInt8(ascii: "f"): scalars.append("\u{C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        let escapeStart = index - 2
                        var code = try hex4()
                        if (0xD800..<0xDC00).contains(code) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else {
                                throw ParseError(offset: escapeStart, "a lone UTF-16 surrogate")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else {
                                throw ParseError(offset: escapeStart, "a lone UTF-16 surrogate")
                            }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else {
                            throw ParseError(offset: escapeStart, "a lone UTF-16 surrogate")
                        }
                        scalars.append(scalar)
                    default: throw ParseError(offset: index - 2, "an unknown escape in a string")
                    }
                    pendingStart = index
                default:
                    guard byte >= 0x20 else { throw ParseError(offset: index, "a control character inside a string") }
                    index += 1
                }
            }
            throw ParseError(offset: index, "the document ends inside a string")
        }

        /// The bytes as text; invalid UTF-8 is refused, not replaced (two different byte strings must not
        /// become one name).
        func text(_ range: Range<Int>) throws(ParseError) -> String {
            guard
                let text = bytes.withUnsafeBufferPointer({
                    String(validating: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self)
                })
            else { throw ParseError(offset: range.lowerBound, "a string that is not valid UTF-8") }
            return text
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw ParseError(offset: index, "a \\u escape without four hex digits") }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt32
                switch byte {
                case 48...57: digit = UInt32(byte - 48)
                case 65...70: digit = UInt32(byte - 55)
                case 97...102: digit = UInt32(byte - 87)
                default: throw ParseError(offset: index, "a \\u escape without four hex digits")
                }
                value = value * 16 + digit
            }
            index += 4
            return value
        }
    }
}
