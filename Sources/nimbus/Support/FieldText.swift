import ArgumentParser
import Foundation
import NimbusCore

/// Record field values as the command line writes and shows them.
///
/// `name=milk` is a STRING, `count=3` an INT64, `price=1.5` a DOUBLE; a type after a colon says it outright:
/// `list:REFERENCE=groceries` (a reference with action NONE; `REFERENCE/DELETE_SELF` or `REFERENCE/VALIDATE`
/// for the others), `due:TIMESTAMP=2026-11-21T10:00:00Z`, `tags:STRING_LIST=a,b`, `where:LOCATION=52.52,13.40`.
enum FieldText {
    static func parse(_ assignment: String) throws -> (name: String, value: FieldValue) {
        guard let equals = assignment.firstIndex(of: "=") else {
            throw ValidationError("--field takes name=value (or name:TYPE=value), not \"\(assignment)\"")
        }
        let key = assignment[..<equals]
        let text = String(assignment[assignment.index(after: equals)...])
        let parts = key.split(separator: ":", maxSplits: 1).map(String.init)
        guard let name = parts.first, !name.isEmpty else { throw ValidationError("--field \"\(assignment)\" has no name") }
        guard parts.count == 2 else { return (name, infer(text)) }
        let type = parts[1].uppercased()
        if type.hasSuffix("_LIST") {
            let element = String(type.dropLast(5))
            let values =
                try text.isEmpty
                ? [] : text.split(separator: ",", omittingEmptySubsequences: false).map { try value(String($0), type: element) }
            return (name, .list(values, elementType: element))
        }
        return (name, try value(text, type: type))
    }

    private static func infer(_ text: String) -> FieldValue {
        if let integer = Int64(text) { return .int64(integer) }
        if let real = Double(text), real.isFinite, text.contains(".") { return .double(real) }
        return .string(text)
    }

    private static func value(_ text: String, type: String) throws -> FieldValue {
        switch type {
        case "STRING": return .string(text)
        case "INT64":
            guard let value = Int64(text) else { throw ValidationError("\"\(text)\" is not a 64-bit integer") }
            return .int64(value)
        case "DOUBLE":
            guard let value = Double(text), value.isFinite else { throw ValidationError("\"\(text)\" is not a finite number") }
            return .double(value)
        case "TIMESTAMP":
            if let milliseconds = Int64(text) { return .timestamp(Date(milliseconds: milliseconds)) }
            guard let date = ISO8601DateFormatter().date(from: text) else {
                throw ValidationError("\"\(text)\" is not an ISO 8601 date (2026-11-21T10:00:00Z) or milliseconds since 1970")
            }
            return .timestamp(date)
        case "BYTES":
            guard let data = Data(base64Encoded: text) else { throw ValidationError("\"\(text)\" is not base64") }
            return .bytes(data)
        case "REFERENCE": return .reference(RecordReference(recordName: text, action: RecordReference.Action.none))
        case "REFERENCE/DELETE_SELF": return .reference(RecordReference(recordName: text, action: .deleteSelf))
        case "REFERENCE/VALIDATE": return .reference(RecordReference(recordName: text, action: .validate))
        case "LOCATION":
            let numbers = text.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard numbers.count == 2 else { throw ValidationError("a LOCATION is latitude,longitude, not \"\(text)\"") }
            return .location(Location(latitude: numbers[0], longitude: numbers[1]))
        default:
            throw ValidationError(
                "unknown field type \(type); use STRING, INT64, DOUBLE, TIMESTAMP, BYTES, REFERENCE[/DELETE_SELF|/VALIDATE], LOCATION or TYPE_LIST"
            )
        }
    }

    static func readable(_ value: FieldValue) -> String {
        switch value {
        case .string(let text): text
        case .int64(let integer): String(integer)
        case .double(let real): String(real)
        case .timestamp(let date): ISO8601DateFormatter().string(from: date)
        case .bytes(let data): data.base64EncodedString()
        case .reference(let reference): "→" + reference.recordName
        case .location(let location): "\(location.latitude),\(location.longitude)"
        case .asset(let asset): "asset (\(asset.size ?? 0) bytes)"
        case .list(let values, _): "[" + values.map(readable).joined(separator: ", ") + "]"
        }
    }
}

/// A plain-text table: a header row and aligned columns.
func table(_ header: [String], _ rows: [[String]]) -> String {
    let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
            .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
    return ([line(header)] + rows.map(line)).joined(separator: "\n")
}
