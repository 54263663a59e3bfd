import ArgumentParser
import Foundation
import NimbusCore

/// The value types `nimbus kv set --type` accepts.
enum ValueType: String, ExpressibleByArgument, CaseIterable {
    case string, int, double, bool, date, data, json

    /// Parses command-line text as this type. `date` takes ISO 8601 or milliseconds since 1970,
    /// `data` takes base64, `json` takes any JSON (integers become INT64, other numbers DOUBLE).
    func parse(_ text: String) throws -> KeyValue {
        switch self {
        case .string: return .string(text)
        case .int:
            guard let value = Int64(text) else { throw ValidationError("\"\(text)\" is not a 64-bit integer") }
            return .int64(value)
        case .double:
            guard let value = Double(text), value.isFinite else { throw ValidationError("\"\(text)\" is not a finite number") }
            return .double(value)
        case .bool:
            switch text.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default: throw ValidationError("\"\(text)\" is not true or false")
            }
        case .date:
            if let milliseconds = Int64(text) { return .date(Date(milliseconds: milliseconds)) }
            guard let date = ISO8601DateFormatter().date(from: text) else {
                throw ValidationError("\"\(text)\" is not an ISO 8601 date (2026-11-21T10:00:00Z) or milliseconds since 1970")
            }
            return .date(date)
        case .data:
            guard let data = Data(base64Encoded: text) else { throw ValidationError("\"\(text)\" is not base64") }
            return .data(data)
        case .json:
            do {
                return try JSONDecoder().decode(UntypedJSON.self, from: Data(text.utf8)).value
            } catch {
                throw ValidationError("\"\(text)\" is not JSON with a key-value type (null has none; use `nimbus kv rm`)")
            }
        }
    }
}

/// Plain JSON read as a key-value value: integers become INT64, other numbers DOUBLE.
private struct UntypedJSON: Decodable {
    let value: KeyValue

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let bool = try? container.decode(Bool.self) {
            value = .bool(bool)
        } else if let integer = try? container.decode(Int64.self) {
            value = .int64(integer)
        } else if let double = try? container.decode(Double.self) {
            value = .double(double)
        } else if let string = try? container.decode(String.self) {
            value = .string(string)
        } else if let array = try? container.decode([UntypedJSON].self) {
            value = .array(array.map(\.value))
        } else {
            value = .dictionary(try container.decode([String: UntypedJSON].self).mapValues(\.value))
        }
    }
}

/// How `nimbus kv` prints values for people.
enum ValueText {
    /// Scalars as they are; arrays and dictionaries as plain JSON (`{"dark": true}`), with dates as ISO 8601
    /// and data as base64 strings inside them.
    static func readable(_ value: KeyValue) -> String {
        switch value {
        case .string(let string): string
        case .int64(let integer): String(integer)
        case .double(let double): String(double)
        case .bool(let bool): String(bool)
        case .date(let date): ISO8601DateFormatter().string(from: date)
        case .data(let data): data.base64EncodedString()
        case .array(let values): "[" + values.map(inside).joined(separator: ", ") + "]"
        case .dictionary(let values):
            "{" + values.keys.sorted().map { "\(quoted($0)): \(inside(values[$0]!))" }.joined(separator: ", ") + "}"
        }
    }

    /// `key = value`, with the type where the text alone does not tell it (a string "42" from an INT64).
    static func line(key: String, value: KeyValue) -> String {
        switch value {
        case .array, .dictionary: "\(key) = \(readable(value))"
        default: "\(key) = \(readable(value))  (\(value.typeName))"
        }
    }

    /// A value inside an array or dictionary, where text is quoted.
    private static func inside(_ value: KeyValue) -> String {
        switch value {
        case .string, .date, .data: quoted(readable(value))
        case .int64, .double, .bool, .array, .dictionary: readable(value)
        }
    }

    private static func quoted(_ string: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(string)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    /// The wire form, `{"type": ..., "value": ...}`: lossless, for scripts.
    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }
}
