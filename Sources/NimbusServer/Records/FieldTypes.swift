import Foundation
import NimbusCore

/// Which field values a schema field of a given wire type accepts.
enum FieldTypes {
    /// The value as a value of `wireType`, or nil when it is not one. Whole numbers become DOUBLE or
    /// TIMESTAMP values where the field is one, and other numbers TIMESTAMP values rounded to the millisecond
    /// (JSON cannot tell them apart when `type` is omitted), and
    /// an empty list takes the field's list type.
    static func conform(_ value: FieldValue, to schemaType: String) -> FieldValue? {
        // Schemas call asset fields ASSET, the wire calls their values ASSETID.
        let wireType =
            switch schemaType {
            case "ASSET": "ASSETID"
            case "ASSET_LIST": "ASSETID_LIST"
            default: schemaType
            }
        if value.typeName == wireType { return value }
        switch (value, wireType) {
        case (.int64(let integer), "DOUBLE"): return .double(Double(integer))
        case (.int64(let milliseconds), "TIMESTAMP"): return Date(wireMilliseconds: milliseconds).map(FieldValue.timestamp)
        // What `Date`'s own encoding writes: milliseconds with a fraction.
        case (.double(let milliseconds), "TIMESTAMP"):
            return Date(roundingWireMilliseconds: milliseconds).map(FieldValue.timestamp)
        case (.list(let values, _), _) where wireType.hasSuffix("_LIST"):
            let elementType = String(wireType.dropLast(5))
            var conformed = [FieldValue]()
            for element in values {
                guard let typed = conform(element, to: elementType) else { return nil }
                conformed.append(typed)
            }
            return .list(conformed, elementType: elementType)
        default: return nil
        }
    }
}
