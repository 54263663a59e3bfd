import Foundation

/// Parses `NSPredicate`-format strings, as `CKQuery` accepts them, into CloudKit's wire filters.
///
/// ```swift
/// try Predicate.filters("name BEGINSWITH 'a' AND number > %@", [.int64(3)])
/// try Predicate.filters("distanceToLocation:fromLocation:(location, %@) < 5000", [.location(here)])
/// ```
/// Supported, as in CloudKit: comparisons (`= == != <> < <= > >=`), `BEGINSWITH`, `IN`, `CONTAINS`,
/// `BETWEEN`, `ANY`/`SOME`, `AND`/`&&`, `NOT` over a single comparison, `TRUEPREDICATE`,
/// `self CONTAINS 'text'` (full text, all tokens) and `distanceToLocation:fromLocation:` (inside a radius,
/// in metres). `%@` takes the next argument, `%K` a key name (a `.string` argument).
public enum Predicate {
    /// Where and why a predicate could not be parsed; `position` counts characters from 0.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var message: String
        public var position: Int
        public var description: String { "invalid predicate at position \(position): \(message)" }
    }

    /// The system field name full-text search (`self CONTAINS 'text'`) is sent with.
    public static let allTokensField = "allTokens"

    public static func filters(_ format: String, _ arguments: [FieldValue] = []) throws(ParseError) -> [QueryFilter] {
        var parser = Parser(tokens: try Lexer(format).tokens(), arguments: arguments, end: format.count)
        return try parser.parse()
    }
}

extension Predicate {
    enum Token: Equatable {
        case identifier(String)
        case string(String)
        case number(String)
        case symbol(String)
        case argument(Character)
    }

    struct Lexer {
        let characters: [Character]
        init(_ text: String) { characters = Array(text) }

        func tokens() throws(ParseError) -> [(token: Token, position: Int)] {
            var tokens = [(token: Token, position: Int)]()
            var index = 0
            while index < characters.count {
                let character = characters[index]
                let start = index
                if character.isWhitespace {
                    index += 1
                } else if character == "'" || character == "\"" {
                    index += 1
                    var text = ""
                    while index < characters.count, characters[index] != character {
                        if characters[index] == "\\", index + 1 < characters.count { index += 1 }
                        text.append(characters[index])
                        index += 1
                    }
                    guard index < characters.count else { throw ParseError(message: "unterminated string", position: start) }
                    index += 1
                    tokens.append((.string(text), start))
                } else if character.isNumber
                    || (character == "-" && index + 1 < characters.count && characters[index + 1].isNumber)
                {
                    index += 1
                    while index < characters.count, characters[index].isNumber || characters[index] == "." { index += 1 }
                    tokens.append((.number(String(characters[start..<index])), start))
                } else if character.isLetter || character == "_" {
                    while index < characters.count,
                        characters[index].isLetter || characters[index].isNumber || characters[index] == "_"
                            || characters[index] == ":"
                    { index += 1 }
                    tokens.append((.identifier(String(characters[start..<index])), start))
                } else if character == "%" {
                    index += 1
                    while index < characters.count, characters[index] == "l" { index += 1 }
                    guard index < characters.count, "@Kdif".contains(characters[index]) else {
                        throw ParseError(message: "unknown format specifier; use %@ or %K", position: start)
                    }
                    tokens.append((.argument(characters[index]), start))
                    index += 1
                } else {
                    let two = index + 1 < characters.count ? String(characters[index...index + 1]) : ""
                    if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||"].contains(two) {
                        tokens.append((.symbol(two), start))
                        index += 2
                    } else if "=<>(){},![]".contains(character) {
                        tokens.append((.symbol(String(character)), start))
                        index += 1
                    } else {
                        throw ParseError(message: "unexpected character \"\(character)\"", position: start)
                    }
                }
            }
            return tokens
        }
    }

    struct Parser {
        let tokens: [(token: Token, position: Int)]
        let arguments: [FieldValue]
        let end: Int
        var index = 0
        var argumentIndex = 0

        init(tokens: [(token: Token, position: Int)], arguments: [FieldValue], end: Int) {
            self.tokens = tokens
            self.arguments = arguments
            self.end = end
        }

        var position: Int { index < tokens.count ? tokens[index].position : end }

        func error(_ message: String) -> ParseError { ParseError(message: message, position: position) }

        func peekKeyword(_ keyword: String) -> Bool {
            if index < tokens.count, case .identifier(let word) = tokens[index].token { return word.uppercased() == keyword }
            return false
        }

        mutating func takeKeyword(_ keywords: String...) -> Bool {
            guard keywords.contains(where: peekKeyword) else { return false }
            index += 1
            return true
        }

        mutating func takeSymbol(_ symbols: String...) -> String? {
            if index < tokens.count, case .symbol(let symbol) = tokens[index].token, symbols.contains(symbol) {
                index += 1
                return symbol
            }
            return nil
        }

        mutating func parse() throws(ParseError) -> [QueryFilter] {
            if takeKeyword("TRUEPREDICATE") {
                guard index == tokens.count else { throw error("TRUEPREDICATE stands alone") }
                return []
            }
            let filters = try conjunction()
            guard index == tokens.count else {
                if peekKeyword("OR") || tokens[index].token == .symbol("||") {
                    throw error("OR is not supported by CloudKit queries")
                }
                throw error("expected AND or the end of the predicate")
            }
            return filters
        }

        mutating func conjunction() throws(ParseError) -> [QueryFilter] {
            var filters = try term()
            while takeKeyword("AND") || takeSymbol("&&") != nil { filters += try term() }
            return filters
        }

        mutating func term() throws(ParseError) -> [QueryFilter] {
            if takeKeyword("NOT") || takeSymbol("!") != nil {
                let start = position
                let inner = try term()
                guard inner.count == 1, let negated = inner[0].comparator.negated else {
                    throw ParseError(message: "NOT applies only to a single comparison that CloudKit can negate", position: start)
                }
                var filter = inner[0]
                filter.comparator = negated
                return [filter]
            }
            if takeSymbol("(") != nil {
                let filters = try conjunction()
                guard takeSymbol(")") != nil else { throw error("expected )") }
                return filters
            }
            if takeKeyword("FALSEPREDICATE") { throw error("FALSEPREDICATE is not supported") }
            return try comparison()
        }

        mutating func comparison() throws(ParseError) -> [QueryFilter] {
            if takeKeyword("ANY", "SOME") {
                let key = try keyPath()
                if takeKeyword("BEGINSWITH") { return [try filter(key, .listMemberBeginsWith, value())] }
                if takeKeyword("IN") { return [try filter(key, .listContainsAny, value())] }
                guard takeSymbol("=", "==") != nil else { throw error("expected =, IN or BEGINSWITH after ANY key") }
                return [try filter(key, .listContains, value())]
            }
            if peekKeyword("DISTANCETOLOCATION:FROMLOCATION:") { return [try distance()] }
            if peekKeyword("SELF") {
                index += 1
                guard takeKeyword("CONTAINS") else { throw error("expected CONTAINS after self") }
                return [
                    QueryFilter(
                        systemFieldName: Predicate.allTokensField, comparator: .containsAllTokens, fieldValue: try value())
                ]
            }
            if isValueStart {
                // `value IN key` is list membership; `value < key` compares the other way round.
                let left = try value()
                if takeKeyword("IN") { return [try filter(keyPath(), .listContains, left)] }
                guard let symbol = takeSymbol("=", "==", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>") else {
                    throw error("expected a comparison after the value")
                }
                return [try filter(keyPath(), Self.comparator(symbol, flipped: true), left)]
            }
            let key = try keyPath()
            if takeKeyword("BEGINSWITH") { return [try filter(key, .beginsWith, value())] }
            if takeKeyword("CONTAINS") { return [try filter(key, .listContains, value())] }
            if takeKeyword("IN") { return [try filter(key, .in, value())] }
            if takeKeyword("BETWEEN") {
                let start = position
                guard case .list(let bounds, _) = try value(), bounds.count == 2 else {
                    throw ParseError(message: "BETWEEN takes two values, like {1, 5}", position: start)
                }
                return [try filter(key, .greaterThanOrEquals, bounds[0]), try filter(key, .lessThanOrEquals, bounds[1])]
            }
            guard let symbol = takeSymbol("=", "==", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>") else {
                throw error("expected a comparison after \(key)")
            }
            return [try filter(key, Self.comparator(symbol, flipped: false), value())]
        }

        var isValueStart: Bool {
            guard index < tokens.count else { return false }
            switch tokens[index].token {
            case .string, .number: return true
            case .argument(let specifier): return specifier != "K"
            case .symbol(let symbol): return symbol == "{"
            case .identifier(let word): return ["TRUE", "FALSE", "YES", "NO"].contains(word.uppercased())
            }
        }

        mutating func keyPath() throws(ParseError) -> String {
            guard index < tokens.count else { throw error("expected a field name") }
            switch tokens[index].token {
            case .identifier(let name) where !name.contains(":"):
                index += 1
                return name
            case .argument("K"):
                let start = position
                index += 1
                guard case .string(let name) = try nextArgument(at: start) else {
                    throw ParseError(message: "%K takes a field name as a string argument", position: start)
                }
                return name
            default:
                throw error("expected a field name")
            }
        }

        /// The next % argument; `start` is where its specifier stands, for the error.
        mutating func nextArgument(at start: Int) throws(ParseError) -> FieldValue {
            guard argumentIndex < arguments.count else {
                throw ParseError(message: "the predicate has more % arguments than were given", position: start)
            }
            defer { argumentIndex += 1 }
            return arguments[argumentIndex]
        }

        mutating func value() throws(ParseError) -> FieldValue {
            guard index < tokens.count else { throw error("expected a value") }
            let (token, start) = tokens[index]
            index += 1
            switch token {
            case .string(let text): return .string(text)
            case .number(let text):
                if let integer = Int64(text) { return .int64(integer) }
                if let double = Double(text) { return .double(double) }
                throw ParseError(message: "\"\(text)\" is not a number", position: start)
            case .argument(let specifier) where specifier != "K": return try nextArgument(at: start)
            case .identifier(let word) where ["TRUE", "YES"].contains(word.uppercased()): return .int64(1)
            case .identifier(let word) where ["FALSE", "NO"].contains(word.uppercased()): return .int64(0)
            case .symbol("{"):
                var values = [FieldValue]()
                if takeSymbol("}") == nil {
                    repeat { values.append(try value()) } while takeSymbol(",") != nil
                    guard takeSymbol("}") != nil else { throw error("expected } to close the list") }
                }
                return .list(values)
            default:
                throw ParseError(message: "expected a value", position: start)
            }
        }

        mutating func distance() throws(ParseError) -> QueryFilter {
            index += 1
            guard takeSymbol("(") != nil else { throw error("expected ( after distanceToLocation:fromLocation:") }
            let key = try keyPath()
            guard takeSymbol(",") != nil else { throw error("expected , and a location") }
            let origin = try value()
            guard case .location = origin else {
                throw error("the second argument of distanceToLocation:fromLocation: must be a location")
            }
            guard takeSymbol(")") != nil else { throw error("expected )") }
            guard takeSymbol("<", "<=") != nil else { throw error("CloudKit queries only find records inside a radius: use <") }
            let radiusStart = position
            let radius: Double
            switch try value() {
            case .int64(let metres): radius = Double(metres)
            case .double(let metres): radius = metres
            default: throw ParseError(message: "the radius must be a number of metres", position: radiusStart)
            }
            var filter = try filter(key, .near, origin)
            filter.distance = radius
            return filter
        }

        func filter(_ key: String, _ comparator: QueryFilter.Comparator, _ value: FieldValue) throws(ParseError) -> QueryFilter {
            if let system = QueryFilter.systemFields[key] {
                return QueryFilter(systemFieldName: system, comparator: comparator, fieldValue: value)
            }
            return QueryFilter(fieldName: key, comparator: comparator, fieldValue: value)
        }

        static func comparator(_ symbol: String, flipped: Bool) -> QueryFilter.Comparator {
            switch symbol {
            case "!=", "<>": .notEquals
            case "<": flipped ? .greaterThan : .lessThan
            case "<=", "=<": flipped ? .greaterThanOrEquals : .lessThanOrEquals
            case ">": flipped ? .lessThan : .greaterThan
            case ">=", "=>": flipped ? .lessThanOrEquals : .greaterThanOrEquals
            default: .equals
            }
        }
    }
}

extension Predicate.ParseError {
    /// The wire error a server answers with for this predicate.
    public var wireError: NimbusError { NimbusError.badRequest(description) }
}
