import Foundation
import GRDB
import NimbusCore

/// Repairs records stored before numbers beyond a Double's range were refused: a DOUBLE sent as `1e400`
/// was read as infinity and stored as `"value":null` (a DOUBLE_LIST element as a `null` element), which
/// no reader of the record could decode, so the record could never be read, changed or deleted again.
///
/// The value was lost when it was stored; what can be saved is the record. A field whose value is null
/// is removed (what a null value means on the wire), a null list element is dropped, and the index rows
/// of the infinite values go. Change tags stay as they were: no device could read the broken version, so
/// each will fetch the repaired one under the same tag.
enum NonFiniteValueRepair {
    static func run(_ db: Database) throws {
        var repairs = [(zoneID: Int64, key: String, payload: Data, growth: Int)]()
        let candidates = try Row.fetchCursor(
            db,
            sql: """
                SELECT e.zone_id, e.key, e.payload FROM entries e JOIN zones z ON z.id = e.zone_id
                WHERE z.service LIKE 'db:%' AND e.payload IS NOT NULL AND instr(e.payload, x'6e756c6c') > 0
                """)
        while let row = try candidates.next() {
            let payload: Data = row["payload"]
            if let repaired = repaired(payload) {
                repairs.append((row["zone_id"], row["key"], repaired, repaired.count - payload.count))
            }
        }
        for repair in repairs {
            try db.execute(
                sql: "UPDATE entries SET payload = ?, size = size + ? WHERE zone_id = ? AND key = ?",
                arguments: [repair.payload, repair.growth, repair.zoneID, repair.key])
            try db.execute(
                sql: "UPDATE zones SET live_bytes = live_bytes + ? WHERE id = ?", arguments: [repair.growth, repair.zoneID])
        }
        // 9e999 is SQLite's literal for infinity; no finite value can have reached an index row as one.
        try db.execute(sql: "DELETE FROM entry_index WHERE typeof(value) = 'real' AND abs(value) = 9e999")
    }

    /// The record payload without its null field values and null list elements; nil when it has none.
    static func repaired(_ payload: Data) -> Data? {
        guard case .object(var members) = try? JSONTree(parsing: payload),
            let fieldsIndex = members.firstIndex(where: { $0.key == "fields" }),
            case .object(let fields) = members[fieldsIndex].value
        else { return nil }
        var changed = false
        var kept = [(key: String, value: JSONTree)]()
        for (name, field) in fields {
            guard case .object(var parts) = field, let valueIndex = parts.firstIndex(where: { $0.key == "value" }) else {
                kept.append((name, field))
                continue
            }
            switch parts[valueIndex].value {
            case .null:
                changed = true
                continue
            case .array(let elements) where elements.contains(.null):
                changed = true
                parts[valueIndex].value = .array(elements.filter { $0 != .null })
                kept.append((name, .object(parts)))
            default: kept.append((name, field))
            }
        }
        guard changed else { return nil }
        members[fieldsIndex].value = .object(kept)
        var json = JSONWriter()
        json.tree(.object(members))
        return Data(json.bytes)
    }
}
