import Foundation

/// A value in the key-value store: the property-list types `NSUbiquitousKeyValueStore` accepts.
///
/// On the wire a value is tagged like a CloudKit field, `{"type": "INT64", "value": 3}`; dates travel as
/// milliseconds since 1970 (`TIMESTAMP`), data as base64 (`BYTES`), and lists and dictionaries nest
/// tagged values.
public enum KeyValue: Hashable, Sendable {
    case string(String)
    case int64(Int64)
    case double(Double)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case array([KeyValue])
    case dictionary([String: KeyValue])

    /// How many bytes the value counts for against the store's size limits.
    ///
    /// Strings and dictionary keys count their UTF-8 bytes, data its bytes, numbers and dates 8,
    /// booleans 1; containers count the sum of what they hold. The measure is independent of the wire
    /// encoding, so a value counts the same on every client and backend.
    public var byteSize: Int {
        switch self {
        case .string(let string): string.utf8.count
        case .int64, .double, .date: 8
        case .bool: 1
        case .data(let data): data.count
        case .array(let values): values.reduce(0) { $0 + $1.byteSize }
        case .dictionary(let values): values.reduce(0) { $0 + $1.key.utf8.count + $1.value.byteSize }
        }
    }

    /// The wire name of the value's type.
    public var typeName: String {
        switch self {
        case .string: "STRING"
        case .int64: "INT64"
        case .double: "DOUBLE"
        case .bool: "BOOLEAN"
        case .date: "TIMESTAMP"
        case .data: "BYTES"
        case .array: "LIST"
        case .dictionary: "DICTIONARY"
        }
    }

    /// Whether every number in the value can travel as JSON (no NaN or infinity).
    public var isRepresentable: Bool {
        switch self {
        case .double(let value): value.isFinite
        case .array(let values): values.allSatisfy(\.isRepresentable)
        case .dictionary(let values): values.values.allSatisfy(\.isRepresentable)
        default: true
        }
    }
}

extension KeyValue: Codable {
    enum CodingKeys: String, CodingKey { case type, value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "STRING": self = .string(try container.decode(String.self, forKey: .value))
        case "INT64": self = .int64(try container.decode(Int64.self, forKey: .value))
        case "DOUBLE": self = .double(try container.decode(Double.self, forKey: .value))
        case "BOOLEAN": self = .bool(try container.decode(Bool.self, forKey: .value))
        case "TIMESTAMP":
            self = .date(try Date(wireMillisecondsIn: container, forKey: .value))
        case "BYTES":
            let base64 = try container.decode(String.self, forKey: .value)
            guard let data = Data(base64Encoded: base64) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .value, in: container, debugDescription: "BYTES value is not base64")
            }
            self = .data(data)
        case "LIST": self = .array(try container.decode([KeyValue].self, forKey: .value))
        case "DICTIONARY": self = .dictionary(try container.decode([String: KeyValue].self, forKey: .value))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container,
                debugDescription:
                    "unknown value type \"\(type)\"; expected STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP, BYTES, LIST or DICTIONARY"
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(typeName, forKey: .type)
        switch self {
        case .string(let value): try container.encode(value, forKey: .value)
        case .int64(let value): try container.encode(value, forKey: .value)
        case .double(let value): try container.encode(value, forKey: .value)
        case .bool(let value): try container.encode(value, forKey: .value)
        case .date(let value): try container.encode(value.milliseconds, forKey: .value)
        case .data(let value): try container.encode(value.base64EncodedString(), forKey: .value)
        case .array(let value): try container.encode(value, forKey: .value)
        case .dictionary(let value): try container.encode(value, forKey: .value)
        }
    }
}
