import Foundation
import NimbusCore

/// Record field values as a person types and reads them in the dashboard: numbers and text as they are,
/// timestamps in ISO 8601 (UTC), references by record name, locations as `latitude, longitude`, bytes in
/// base64, lists one element per line.
enum RecordFieldText {
    static func parse(_ text: String, type: String, isList: Bool, field: String) throws(NimbusError) -> FieldValue {
        if isList {
            let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
            var elements = [FieldValue]()
            for line in lines { elements.append(try element(line, type: type, field: field)) }
            return .list(elements, elementType: type)
        }
        return try element(text, type: type, field: field)
    }

    private static func element(_ text: String, type: String, field: String) throws(NimbusError) -> FieldValue {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        switch type {
        case "STRING": return .string(text)
        case "INT64":
            guard let value = Int64(trimmed) else {
                throw .badRequest("\(field) must be a whole number, not \"\(trimmed.prefix(40))\"")
            }
            return .int64(value)
        case "DOUBLE":
            guard let value = Double(trimmed), value.isFinite else {
                throw .badRequest("\(field) must be a number, not \"\(trimmed.prefix(40))\"")
            }
            return .double(value)
        case "TIMESTAMP":
            guard let date = timestamp(trimmed) else {
                throw .badRequest("\(field) must be a date and time like 2026-11-28T14:30:00Z, not \"\(trimmed.prefix(40))\"")
            }
            return .timestamp(date)
        case "REFERENCE":
            try Identifiers.validateRecordName(trimmed)
            return .reference(RecordReference(recordName: trimmed, action: RecordReference.Action.none))
        case "LOCATION":
            let parts = trimmed.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, let latitude = parts[0], let longitude = parts[1], (-90...90).contains(latitude),
                (-180...180).contains(longitude)
            else { throw .badRequest("\(field) must be \"latitude, longitude\", like 48.8584, 2.2945") }
            return .location(Location(latitude: latitude, longitude: longitude))
        case "BYTES":
            guard let data = Data(base64Encoded: trimmed) else { throw .badRequest("\(field) must be base64") }
            return .bytes(data)
        default:
            throw .badRequest("\(field) is of type \(type), which the dashboard cannot set from text")
        }
    }

    /// ISO 8601 with or without seconds and zone (a browser's `datetime-local` sends neither zone nor
    /// seconds; it is read as UTC), or milliseconds since 1970.
    static func timestamp(_ text: String) -> Date? {
        if let milliseconds = Int64(text) { return Date(milliseconds: milliseconds) }
        let formatter = ISO8601DateFormatter()
        for (options, suffix) in [
            (ISO8601DateFormatter.Options.withInternetDateTime, ""), ([.withInternetDateTime, .withFractionalSeconds], ""),
            (.withInternetDateTime, ":00Z"), (.withInternetDateTime, "Z"),
        ] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text + suffix) { return date }
        }
        return nil
    }

    /// The value as the edit form shows it.
    static func text(_ value: FieldValue) -> String {
        switch value {
        case .string(let text): text
        case .int64(let number): String(number)
        case .double(let number): String(number)
        case .timestamp(let date): ISO8601DateFormatter().string(from: date)
        case .bytes(let data): data.base64EncodedString()
        case .reference(let reference): reference.recordName
        case .location(let location): "\(location.latitude), \(location.longitude)"
        case .asset(let asset): asset.size.map { "file of \($0) bytes" } ?? "file"
        case .list(let elements, _): elements.map(text).joined(separator: "\n")
        }
    }
}
