import Foundation
import NimbusCore

/// A Swift type a record field can hold: `record["name"] = "milk"`, `let n: Int64? = record["number"]`.
public protocol RecordValue: Sendable {
    var fieldValue: FieldValue { get }
    init?(fieldValue: FieldValue)
}

extension String: RecordValue {
    public var fieldValue: FieldValue { .string(self) }
    public init?(fieldValue: FieldValue) {
        guard case .string(let value) = fieldValue else { return nil }
        self = value
    }
}

extension Int64: RecordValue {
    public var fieldValue: FieldValue { .int64(self) }
    public init?(fieldValue: FieldValue) {
        guard case .int64(let value) = fieldValue else { return nil }
        self = value
    }
}

extension Int: RecordValue {
    public var fieldValue: FieldValue { .int64(Int64(self)) }
    public init?(fieldValue: FieldValue) {
        guard case .int64(let value) = fieldValue, let int = Int(exactly: value) else { return nil }
        self = int
    }
}

/// CloudKit has no boolean type: booleans are INT64 0 and 1.
extension Bool: RecordValue {
    public var fieldValue: FieldValue { .int64(self ? 1 : 0) }
    public init?(fieldValue: FieldValue) {
        guard case .int64(let value) = fieldValue else { return nil }
        self = value != 0
    }
}

extension Double: RecordValue {
    public var fieldValue: FieldValue { .double(self) }
    public init?(fieldValue: FieldValue) {
        switch fieldValue {
        case .double(let value): self = value
        case .int64(let value): self = Double(value)
        default: return nil
        }
    }
}

extension Date: RecordValue {
    public var fieldValue: FieldValue { .timestamp(self) }
    public init?(fieldValue: FieldValue) {
        guard case .timestamp(let value) = fieldValue else { return nil }
        self = value
    }
}

extension Data: RecordValue {
    public var fieldValue: FieldValue { .bytes(self) }
    public init?(fieldValue: FieldValue) {
        guard case .bytes(let value) = fieldValue else { return nil }
        self = value
    }
}

extension Location: RecordValue {
    public var fieldValue: FieldValue { .location(self) }
    public init?(fieldValue: FieldValue) {
        guard case .location(let value) = fieldValue else { return nil }
        self = value
    }
}

extension Reference: RecordValue {
    public var fieldValue: FieldValue { .reference(wire) }
    public init?(fieldValue: FieldValue) {
        guard case .reference(let value) = fieldValue else { return nil }
        self.init(value, zoneID: value.zoneID.map(RecordZoneID.init) ?? .default)
    }
}

extension Array: RecordValue where Element: RecordValue {
    public var fieldValue: FieldValue {
        let values = map(\.fieldValue)
        let elementType = values.first?.typeName ?? (Element.self == String.self ? "STRING" : Self.emptyElementType)
        return .list(values, elementType: elementType)
    }

    public init?(fieldValue: FieldValue) {
        guard case .list(let values, _) = fieldValue else { return nil }
        var elements = [Element]()
        for value in values {
            guard let element = Element(fieldValue: value) else { return nil }
            elements.append(element)
        }
        self = elements
    }

    /// The wire type of an empty list of `Element`, which has no first element to tell.
    private static var emptyElementType: String {
        switch Element.self {
        case is Int64.Type, is Int.Type, is Bool.Type: "INT64"
        case is Double.Type: "DOUBLE"
        case is Date.Type: "TIMESTAMP"
        case is Data.Type: "BYTES"
        case is Location.Type: "LOCATION"
        case is Reference.Type: "REFERENCE"
        default: "STRING"
        }
    }
}

/// A record ID as a value is a reference without an action, as in `Query(…, "list == %@", list.recordID)`.
extension RecordID: RecordValue {
    public var fieldValue: FieldValue { Reference(recordID: self, action: .none).fieldValue }
    public init?(fieldValue: FieldValue) {
        guard let reference = Reference(fieldValue: fieldValue) else { return nil }
        self = reference.recordID
    }
}
