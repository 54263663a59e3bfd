import Foundation

/// A record field's value, in CloudKit Web Services' field types.
///
/// On the wire a field is `{"value": …, "type": "STRING"}`; `type` may be omitted on input, in which
/// case it is inferred from the JSON (string → STRING, integer → INT64, other number → DOUBLE, an object
/// with `recordName` → REFERENCE, with `latitude` → LOCATION, an array → the list of its elements' type).
public indirect enum FieldValue: Hashable, Sendable {
    case string(String)
    case int64(Int64)
    case double(Double)
    /// Milliseconds since 1970 on the wire.
    case timestamp(Date)
    case bytes(Data)
    case reference(RecordReference)
    case location(Location)
    /// A list of one element type; `elementType` names it even when the list is empty.
    case list([FieldValue], elementType: String)

    /// The wire type name, e.g. `STRING` or `INT64_LIST`.
    public var typeName: String {
        switch self {
        case .string: "STRING"
        case .int64: "INT64"
        case .double: "DOUBLE"
        case .timestamp: "TIMESTAMP"
        case .bytes: "BYTES"
        case .reference: "REFERENCE"
        case .location: "LOCATION"
        case .list(_, let elementType): elementType + "_LIST"
        }
    }

    /// A list value, typed by its first element (STRING for an empty list).
    public static func list(_ values: [FieldValue]) -> FieldValue {
        .list(values, elementType: values.first?.typeName ?? "STRING")
    }
}

/// A REFERENCE value: the target record, its zone when not the referencing record's, and the action.
public struct RecordReference: Hashable, Codable, Sendable {
    public var recordName: String
    public var zoneID: ZoneID?
    public var action: Action?

    public enum Action: String, Codable, Sendable {
        case none = "NONE"
        case deleteSelf = "DELETE_SELF"
        case validate = "VALIDATE"
    }

    public init(recordName: String, zoneID: ZoneID? = nil, action: Action? = nil) {
        self.recordName = recordName
        self.zoneID = zoneID
        self.action = action
    }
}

/// A zone's identity on the wire: `{zoneName, ownerRecordName?}`.
public struct ZoneID: Hashable, Codable, Sendable {
    public var zoneName: String
    public var ownerRecordName: String?

    public init(zoneName: String, ownerRecordName: String? = nil) {
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
    }

    public static let defaultZone = ZoneID(zoneName: "_defaultZone")
}

/// A LOCATION value; latitude and longitude are required, the rest optional.
public struct Location: Hashable, Codable, Sendable {
    public var latitude: Double
    public var longitude: Double
    public var horizontalAccuracy: Double?
    public var verticalAccuracy: Double?
    public var altitude: Double?
    public var speed: Double?
    public var course: Double?
    public var timestamp: Int64?

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

extension FieldValue: Codable {
    enum CodingKeys: String, CodingKey { case value, type }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decodeIfPresent(String.self, forKey: .type)
        let value = try container.superDecoder(forKey: .value)
        self = try Self.decode(from: value, type: type ?? Self.inferType(from: value))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try encodeValue(to: container.superEncoder(forKey: .value))
        try container.encode(typeName, forKey: .type)
    }

    private static func decode(from decoder: any Decoder, type: String) throws -> FieldValue {
        let container = try decoder.singleValueContainer()
        if type.hasSuffix("_LIST") {
            let elementType = String(type.dropLast(5))
            var list = try decoder.unkeyedContainer()
            var values = [FieldValue]()
            while !list.isAtEnd { values.append(try decode(from: try list.superDecoder(), type: elementType)) }
            return .list(values, elementType: elementType)
        }
        switch type {
        case "STRING": return .string(try container.decode(String.self))
        case "INT64": return .int64(try container.decode(Int64.self))
        case "DOUBLE": return .double(try container.decode(Double.self))
        case "TIMESTAMP": return .timestamp(Date(milliseconds: try container.decode(Int64.self)))
        case "BYTES":
            guard let data = Data(base64Encoded: try container.decode(String.self)) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "BYTES value is not base64")
            }
            return .bytes(data)
        case "REFERENCE": return .reference(try container.decode(RecordReference.self))
        case "LOCATION": return .location(try container.decode(Location.self))
        default:
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown field type \"\(type)\"")
        }
    }

    private static func inferType(from decoder: any Decoder) throws -> String {
        if let container = try? decoder.singleValueContainer() {
            if (try? container.decode(Int64.self)) != nil { return "INT64" }
            if (try? container.decode(Double.self)) != nil { return "DOUBLE" }
            if (try? container.decode(String.self)) != nil { return "STRING" }
            if (try? container.decode(RecordReference.self)) != nil { return "REFERENCE" }
            if (try? container.decode(Location.self)) != nil { return "LOCATION" }
        }
        if var list = try? decoder.unkeyedContainer() {
            return (list.isAtEnd ? "STRING" : try inferType(from: try list.superDecoder())) + "_LIST"
        }
        throw DecodingError.dataCorrupted(
            .init(codingPath: decoder.codingPath, debugDescription: "cannot infer the field's type; send \"type\""))
    }

    private func encodeValue(to encoder: any Encoder) throws {
        if case .list(let values, _) = self {
            var list = encoder.unkeyedContainer()
            for value in values { try value.encodeValue(to: list.superEncoder()) }
            return
        }
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int64(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .timestamp(let value): try container.encode(value.milliseconds)
        case .bytes(let value): try container.encode(value.base64EncodedString())
        case .reference(let value): try container.encode(value)
        case .location(let value): try container.encode(value)
        case .list: break
        }
    }
}
