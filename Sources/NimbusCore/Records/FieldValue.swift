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
    /// An ASSETID: a file stored beside the record (its bytes are not part of the record).
    case asset(AssetValue)
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
        case .asset: "ASSETID"
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

/// An ASSETID value. To save one, send the `receipt` an upload returned (with its checksum and size); on
/// fetch it carries a time-limited `downloadURL`.
public struct AssetValue: Hashable, Codable, Sendable {
    public var fileChecksum: String?
    public var size: Int64?
    public var receipt: String?
    public var downloadURL: String?
    public var referenceChecksum: String?
    public var wrappingKey: String?
    /// Which stored file this is; the server sets it. Sending a fetched value back unchanged keeps the file.
    public var assetID: String?

    public init(
        fileChecksum: String? = nil, size: Int64? = nil, receipt: String? = nil, downloadURL: String? = nil,
        assetID: String? = nil
    ) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.receipt = receipt
        self.downloadURL = downloadURL
        self.assetID = assetID
    }
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

    // Values are coded straight into the `value` key with concrete types: nested super-encoders cost
    // several times more, and records are coded on every save, fetch and change feed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let type = try container.decodeIfPresent(String.self, forKey: .type) {
            self = try Self.decode(container, type: type)
        } else {
            self = try Self.decode(container, type: try Self.inferType(container))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .string(let value): try container.encode(value, forKey: .value)
        case .int64(let value): try container.encode(value, forKey: .value)
        case .double(let value): try container.encode(value, forKey: .value)
        case .timestamp(let value): try container.encode(value.milliseconds, forKey: .value)
        case .bytes(let value): try container.encode(value.base64EncodedString(), forKey: .value)
        case .reference(let value): try container.encode(value, forKey: .value)
        case .location(let value): try container.encode(value, forKey: .value)
        case .asset(let value): try container.encode(value, forKey: .value)
        case .list(let values, let elementType):
            func elements<T>(_ extract: (FieldValue) -> T?) throws -> [T] {
                let typed = values.compactMap(extract)
                guard typed.count == values.count else {
                    throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath, debugDescription: "mixed list"))
                }
                return typed
            }
            switch elementType {
            case "STRING": try container.encode(try elements(\.string), forKey: .value)
            case "INT64": try container.encode(try elements(\.int64), forKey: .value)
            case "DOUBLE": try container.encode(try elements(\.double), forKey: .value)
            case "TIMESTAMP": try container.encode(try elements(\.timestamp).map(\.milliseconds), forKey: .value)
            case "BYTES": try container.encode(try elements(\.bytes).map { $0.base64EncodedString() }, forKey: .value)
            case "REFERENCE": try container.encode(try elements(\.reference), forKey: .value)
            case "LOCATION": try container.encode(try elements(\.location), forKey: .value)
            case "ASSETID": try container.encode(try elements(\.asset), forKey: .value)
            default:
                throw EncodingError.invalidValue(
                    self, .init(codingPath: encoder.codingPath, debugDescription: "unknown list type"))
            }
        }
        try container.encode(typeName, forKey: .type)
    }

    private var string: String? { if case .string(let value) = self { value } else { nil } }
    private var int64: Int64? { if case .int64(let value) = self { value } else { nil } }
    private var double: Double? { if case .double(let value) = self { value } else { nil } }
    private var timestamp: Date? { if case .timestamp(let value) = self { value } else { nil } }
    private var bytes: Data? { if case .bytes(let value) = self { value } else { nil } }
    private var reference: RecordReference? { if case .reference(let value) = self { value } else { nil } }
    private var location: Location? { if case .location(let value) = self { value } else { nil } }
    private var asset: AssetValue? { if case .asset(let value) = self { value } else { nil } }

    /// An INT64 value: a number, or its digits as a string (what `numbersAsStrings` clients send).
    private static func integer(_ container: KeyedDecodingContainer<CodingKeys>) throws -> Int64 {
        if let integer = try? container.decode(Int64.self, forKey: .value) { return integer }
        guard let integer = Int64(try container.decode(String.self, forKey: .value)) else {
            throw DecodingError.dataCorruptedError(
                forKey: .value, in: container, debugDescription: "an INT64 value is a whole number")
        }
        return integer
    }

    private static func integers(_ container: KeyedDecodingContainer<CodingKeys>) throws -> [Int64] {
        if let integers = try? container.decode([Int64].self, forKey: .value) { return integers }
        return try container.decode([String].self, forKey: .value).map { text in
            guard let integer = Int64(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .value, in: container, debugDescription: "an INT64 value is a whole number")
            }
            return integer
        }
    }

    private static func decode(_ container: KeyedDecodingContainer<CodingKeys>, type: String) throws -> FieldValue {
        switch type {
        case "STRING": return .string(try container.decode(String.self, forKey: .value))
        case "INT64": return .int64(try integer(container))
        case "DOUBLE": return .double(try container.decode(Double.self, forKey: .value))
        case "TIMESTAMP": return .timestamp(try Date(wireMillisecondsIn: container, forKey: .value))
        case "BYTES": return .bytes(try bytes(try container.decode(String.self, forKey: .value), container))
        case "REFERENCE": return .reference(try container.decode(RecordReference.self, forKey: .value))
        case "LOCATION": return .location(try container.decode(Location.self, forKey: .value))
        case "ASSETID", "ASSET": return .asset(try container.decode(AssetValue.self, forKey: .value))
        case "STRING_LIST":
            return .list(try container.decode([String].self, forKey: .value).map(FieldValue.string), elementType: "STRING")
        case "INT64_LIST": return .list(try integers(container).map(FieldValue.int64), elementType: "INT64")
        case "DOUBLE_LIST":
            return .list(try container.decode([Double].self, forKey: .value).map(FieldValue.double), elementType: "DOUBLE")
        case "TIMESTAMP_LIST":
            let dates = try container.decode([Double].self, forKey: .value).map { milliseconds in
                guard let date = Date(roundingWireMilliseconds: milliseconds) else {
                    throw Date.outOfRange(forKey: .value, in: container)
                }
                return FieldValue.timestamp(date)
            }
            return .list(dates, elementType: "TIMESTAMP")
        case "BYTES_LIST":
            return .list(
                try container.decode([String].self, forKey: .value).map { .bytes(try bytes($0, container)) }, elementType: "BYTES"
            )
        case "REFERENCE_LIST":
            return .list(
                try container.decode([RecordReference].self, forKey: .value).map(FieldValue.reference), elementType: "REFERENCE")
        case "ASSETID_LIST", "ASSET_LIST":
            return .list(try container.decode([AssetValue].self, forKey: .value).map(FieldValue.asset), elementType: "ASSETID")
        case "LOCATION_LIST":
            return .list(try container.decode([Location].self, forKey: .value).map(FieldValue.location), elementType: "LOCATION")
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "unknown field type \"\(type)\"")
        }
    }

    private static func bytes(_ base64: String, _ container: KeyedDecodingContainer<CodingKeys>) throws -> Data {
        guard let data = Data(base64Encoded: base64) else {
            throw DecodingError.dataCorruptedError(forKey: .value, in: container, debugDescription: "BYTES value is not base64")
        }
        return data
    }

    /// The type of a value sent without one, from its JSON shape.
    private static func inferType(_ container: KeyedDecodingContainer<CodingKeys>) throws -> String {
        if (try? container.decode(Int64.self, forKey: .value)) != nil { return "INT64" }
        if (try? container.decode(Double.self, forKey: .value)) != nil { return "DOUBLE" }
        if (try? container.decode(String.self, forKey: .value)) != nil { return "STRING" }
        if (try? container.decode(RecordReference.self, forKey: .value)) != nil { return "REFERENCE" }
        if (try? container.decode(Location.self, forKey: .value)) != nil { return "LOCATION" }
        if var list = try? container.nestedUnkeyedContainer(forKey: .value) {
            if list.isAtEnd { return "STRING_LIST" }
            if (try? list.decode(Int64.self)) != nil { return "INT64_LIST" }
            if (try? list.decode(Double.self)) != nil { return "DOUBLE_LIST" }
            if (try? list.decode(String.self)) != nil { return "STRING_LIST" }
            if (try? list.decode(RecordReference.self)) != nil { return "REFERENCE_LIST" }
            if (try? list.decode(Location.self)) != nil { return "LOCATION_LIST" }
        }
        throw DecodingError.dataCorruptedError(
            forKey: .value, in: container, debugDescription: "cannot infer the field's type; send \"type\"")
    }
}
