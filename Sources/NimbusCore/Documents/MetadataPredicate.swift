import Foundation

/// A metadata query's predicate in `NSPredicate` format, as apps give `NSMetadataQuery` one:
///
/// ```swift
/// try MetadataPredicate("%K LIKE '*.icfnote'", [.string(MetadataItem.Key.fsName)])
/// try MetadataPredicate("kMDItemFSSize > 1000 AND kMDItemFSContentChangeDate > %@", [.timestamp(yesterday)])
/// ```
/// Comparisons (`= == != <> < <= > >=`), `LIKE` (`*` and `?`), `BEGINSWITH`, `ENDSWITH`, `CONTAINS`,
/// `IN {…}`, each string operator with `[c]` (ignoring case) and `[d]` (ignoring diacritics); `AND`, `OR`,
/// `NOT`, parentheses, `TRUEPREDICATE`, `FALSEPREDICATE`. It shares the record queries' lexer; unlike
/// CloudKit's, it allows `OR` and `LIKE`, because the daemon evaluates it over items it holds.
public indirect enum MetadataPredicate: Hashable, Codable, Sendable {
    case always(Bool)
    case all([MetadataPredicate])
    case any([MetadataPredicate])
    case not(MetadataPredicate)
    case compare(key: String, operator: Operator, value: MetadataValue, options: Options)

    public enum Operator: String, Hashable, Codable, Sendable {
        case equals, notEquals, lessThan, lessThanOrEquals, greaterThan, greaterThanOrEquals
        case like, beginsWith, endsWith, contains, `in`
    }

    /// String comparison options, as `[cd]` after the operator.
    public struct Options: OptionSet, Hashable, Codable, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let caseInsensitive = Options(rawValue: 1)
        public static let diacriticInsensitive = Options(rawValue: 2)
    }

    /// Parses `format`; `%@` takes the next argument, `%K` a key (a `.string` argument).
    public init(_ format: String, _ arguments: [FieldValue] = []) throws(Predicate.ParseError) {
        var parser = Parser(tokens: try Predicate.Lexer(format).tokens(), arguments: arguments, end: format.count)
        self = try parser.parse()
    }

    /// Whether an item whose attributes `value(for:)` gives matches. A key the item lacks matches nothing
    /// but `!=`, as in Spotlight.
    public func matches(_ value: (String) -> MetadataValue?) -> Bool {
        switch self {
        case .always(let result): return result
        case .all(let predicates): return predicates.allSatisfy { $0.matches(value) }
        case .any(let predicates): return predicates.contains { $0.matches(value) }
        case .not(let predicate): return !predicate.matches(value)
        case .compare(let key, let comparison, let expected, let options):
            guard let actual = value(key) else { return comparison == .notEquals }
            return Self.compare(actual, comparison, expected, options)
        }
    }

    static func compare(_ actual: MetadataValue, _ comparison: Operator, _ expected: MetadataValue, _ options: Options) -> Bool {
        if comparison == .in {
            guard case .list(let values) = expected else { return false }
            return values.contains { compare(actual, .equals, $0, options) }
        }
        switch (actual, expected) {
        case (.string(let text), .string(let pattern)):
            let (a, b) = (fold(text, options), fold(pattern, options))
            if let ordered = order(a, comparison, b) { return ordered }
            switch comparison {
            case .like: return like(a, b)
            case .beginsWith: return a.hasPrefix(b)
            case .endsWith: return a.hasSuffix(b)
            case .contains: return a.contains(b)
            default: return false
            }
        default:
            guard let a = actual.number, let b = expected.number else { return comparison == .notEquals }
            return order(a, comparison, b) ?? false
        }
    }

    /// An equality or ordering comparison; nil for the other operators.
    private static func order<T: Comparable>(_ a: T, _ comparison: Operator, _ b: T) -> Bool? {
        switch comparison {
        case .equals: a == b
        case .notEquals: a != b
        case .lessThan: a < b
        case .lessThanOrEquals: a <= b
        case .greaterThan: a > b
        case .greaterThanOrEquals: a >= b
        case .like, .beginsWith, .endsWith, .contains, .in: nil
        }
    }

    private static func fold(_ text: String, _ options: Options) -> String {
        var folding: String.CompareOptions = []
        if options.contains(.caseInsensitive) { folding.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { folding.insert(.diacriticInsensitive) }
        return folding.isEmpty ? text : text.folding(options: folding, locale: nil)
    }

    /// `*` matches any run of characters, `?` one character (NSPredicate's LIKE).
    private static func like(_ text: String, _ pattern: String) -> Bool {
        var (text, pattern) = (text, pattern)
        return text.withUTF8 { text in pattern.withUTF8 { pattern in like(text, pattern) } }
    }

    /// LIKE over the strings' own UTF-8 (a query tests each of up to 100,000 names; copying their scalars into
    /// arrays was two allocations a name): `?` takes one scalar, its lead byte and continuation bytes; a literal
    /// compares bytes, which is comparing scalars, since no scalar's bytes begin another's.
    private static func like(_ text: UnsafeBufferPointer<UInt8>, _ pattern: UnsafeBufferPointer<UInt8>) -> Bool {
        func scalar(after index: Int) -> Int {
            var next = index + 1
            while next < text.count, text[next] & 0xC0 == 0x80 { next += 1 }
            return next
        }
        let (any, one) = (UInt8(ascii: "*"), UInt8(ascii: "?"))
        var (t, p) = (0, 0)
        var star: (pattern: Int, text: Int)?
        while t < text.count {
            if p < pattern.count, pattern[p] == one {
                t = scalar(after: t)
                p += 1
            } else if p < pattern.count, pattern[p] == any {
                star = (p, t)
                p += 1
            } else if p < pattern.count, pattern[p] == text[t] {
                t += 1
                p += 1
            } else if let last = star {
                p = last.pattern + 1
                t = scalar(after: last.text)
                star = (last.pattern, t)
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == any { p += 1 }
        return p == pattern.count
    }
}

/// A value a metadata predicate compares: text, a number (booleans are 1 and 0), a date or a list.
public enum MetadataValue: Hashable, Codable, Sendable {
    case string(String)
    case number(Double)
    case date(Date)
    indirect case list([MetadataValue])

    var number: Double? {
        switch self {
        case .number(let value): value
        case .date(let date): date.timeIntervalSince1970
        case .string, .list: nil
        }
    }
}

extension MetadataPredicate {
    struct Parser {
        var base: Predicate.Parser

        init(tokens: [(token: Predicate.Token, position: Int)], arguments: [FieldValue], end: Int) {
            base = Predicate.Parser(tokens: tokens, arguments: arguments, end: end)
        }

        mutating func parse() throws(Predicate.ParseError) -> MetadataPredicate {
            let predicate = try disjunction()
            guard base.index == base.tokens.count else { throw base.error("expected AND, OR or the end of the predicate") }
            return predicate
        }

        mutating func disjunction() throws(Predicate.ParseError) -> MetadataPredicate {
            var terms = [try conjunction()]
            while base.takeKeyword("OR") || base.takeSymbol("||") != nil { terms.append(try conjunction()) }
            return terms.count == 1 ? terms[0] : .any(terms)
        }

        mutating func conjunction() throws(Predicate.ParseError) -> MetadataPredicate {
            var terms = [try term()]
            while base.takeKeyword("AND") || base.takeSymbol("&&") != nil { terms.append(try term()) }
            return terms.count == 1 ? terms[0] : .all(terms)
        }

        mutating func term() throws(Predicate.ParseError) -> MetadataPredicate {
            if base.takeKeyword("NOT") || base.takeSymbol("!") != nil { return .not(try term()) }
            if base.takeSymbol("(") != nil {
                let inner = try disjunction()
                guard base.takeSymbol(")") != nil else { throw base.error("expected )") }
                return inner
            }
            if base.takeKeyword("TRUEPREDICATE") { return .always(true) }
            if base.takeKeyword("FALSEPREDICATE") { return .always(false) }
            let key = try base.keyPath()
            let comparison: Operator
            if let symbol = base.takeSymbol("=", "==", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>") {
                comparison =
                    switch symbol {
                    case "!=", "<>": .notEquals
                    case "<": .lessThan
                    case "<=", "=<": .lessThanOrEquals
                    case ">": .greaterThan
                    case ">=", "=>": .greaterThanOrEquals
                    default: .equals
                    }
            } else if base.takeKeyword("LIKE") {
                comparison = .like
            } else if base.takeKeyword("BEGINSWITH") {
                comparison = .beginsWith
            } else if base.takeKeyword("ENDSWITH") {
                comparison = .endsWith
            } else if base.takeKeyword("CONTAINS") {
                comparison = .contains
            } else if base.takeKeyword("IN") {
                comparison = .in
            } else {
                throw base.error("expected a comparison after \(key)")
            }
            let options = try self.options()
            let start = base.position
            guard let value = Self.metadataValue(try base.value()) else {
                throw Predicate.ParseError(message: "metadata compares text, numbers, dates and lists", position: start)
            }
            return .compare(key: key, operator: comparison, value: value, options: options)
        }

        /// `[c]`, `[d]` or `[cd]` after an operator.
        mutating func options() throws(Predicate.ParseError) -> Options {
            guard base.takeSymbol("[") != nil else { return [] }
            guard base.index < base.tokens.count, case .identifier(let letters) = base.tokens[base.index].token,
                letters.allSatisfy({ "cdCD".contains($0) })
            else { throw base.error("expected c, d or cd inside [ ]") }
            base.index += 1
            guard base.takeSymbol("]") != nil else { throw base.error("expected ]") }
            var options: Options = []
            if letters.lowercased().contains("c") { options.insert(.caseInsensitive) }
            if letters.lowercased().contains("d") { options.insert(.diacriticInsensitive) }
            return options
        }

        static func metadataValue(_ value: FieldValue) -> MetadataValue? {
            switch value {
            case .string(let text): .string(text)
            case .int64(let number): .number(Double(number))
            case .double(let number): .number(number)
            case .timestamp(let date): .date(date)
            case .list(let values, _):
                values.map(metadataValue).allSatisfy { $0 != nil } ? .list(values.compactMap(metadataValue)) : nil
            default: nil
            }
        }
    }
}
