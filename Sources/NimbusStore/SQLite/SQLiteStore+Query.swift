import Foundation
import NimbusCore
import GRDB

extension SQLiteStore {
    package func query(_ query: IndexQuery) async throws -> [QueryMatch] {
        try await read { db in
            var zoneIDs = [Int64]()
            for zone in query.zones {
                if let id = try Self.zoneID(of: zone, db) { zoneIDs.append(id) }
            }
            guard !zoneIDs.isEmpty, query.limit > 0 else { return [] }
            let sql = IndexQuerySQL(query, zoneIDs: zoneIDs)
            return try Row.fetchAll(db, sql: sql.text, arguments: StatementArguments(sql.arguments)).map { row in
                QueryMatch(
                    zone: ZoneAddress(service: try Self.service(row["service"]), name: row["name"]),
                    entry: Entry(key: row["key"], payload: row["payload"], sequence: row["sequence"], audience: row["audience"]))
            }
        }
    }

    private static func zoneID(of zone: ZoneKey, _ db: Database) throws -> Int64? {
        try Int64.fetchOne(
            try db.cachedStatement(sql: "SELECT id FROM zones WHERE account_id = ? AND service = ? AND name = ?"),
            arguments: [zone.accountID, zone.address.service.encoded, zone.address.name])
    }

    /// The columns an index value is stored in: the value itself, and a longitude for points.
    static func columns(_ value: IndexValue) -> (value: DatabaseValue, longitude: Double?) {
        switch value {
        case .integer(let integer): (integer.databaseValue, nil)
        case .real(let real): (real.databaseValue, nil)
        case .text(let text): (text.databaseValue, nil)
        case .point(let latitude, let longitude): (latitude.databaseValue, longitude)
        }
    }

    /// The SQL function queries measure distances with.
    static let distanceFunction = DatabaseFunction("nimbus_distance", argumentCount: 4, pure: true) { values in
        guard let latitude1 = Double.fromDatabaseValue(values[0]), let longitude1 = Double.fromDatabaseValue(values[1]),
            let latitude2 = Double.fromDatabaseValue(values[2]), let longitude2 = Double.fromDatabaseValue(values[3])
        else { return nil }
        return greatCircleMeters(latitude1, longitude1, latitude2, longitude2)
    }
}

/// The SELECT an `IndexQuery` becomes: one condition's rows drive the search (the most selective kind
/// of match), the others are checked per candidate through the index's primary key, and each sort key
/// is the first row of its field.
private struct IndexQuerySQL {
    var text = ""
    var arguments = [DatabaseValueConvertible?]()

    init(_ query: IndexQuery, zoneIDs: [Int64]) {
        let zones = Array(repeating: "?", count: zoneIDs.count).joined(separator: ", ")
        let driver = query.drivingCondition
        let drivingCondition = driver?.element ?? IndexCondition(field: IndexEntry.keyField, .prefix(""))

        text =
            "SELECT z.service, z.name, e.key, e.payload, e.sequence, e.audience FROM (SELECT DISTINCT zone_id, sequence FROM entry_index d "
        arguments += zoneIDs
        text += "WHERE d.zone_id IN (\(zones)) AND \(fields(drivingCondition.fields, of: query.kind, alias: "d")) AND "
        text += match(drivingCondition.match, alias: "d") + ") m "
        text += "JOIN entries e ON e.zone_id = m.zone_id AND e.sequence = m.sequence JOIN zones z ON z.id = e.zone_id "
        for (number, sort) in query.sort.enumerated() {
            text += "LEFT JOIN entry_index s\(number) ON s\(number).zone_id = e.zone_id AND s\(number).sequence = e.sequence "
            text += "AND s\(number).field = ? AND s\(number).position = 0 "
            arguments.append(IndexFieldID.of(kind: query.kind, field: sort.field))
        }
        text += "WHERE e.payload IS NOT NULL"
        for (number, condition) in query.conditions.enumerated() where number != driver?.offset {
            let rows =
                "FROM entry_index c WHERE c.zone_id = e.zone_id AND c.sequence = e.sequence AND \(fields(condition.fields, of: query.kind, alias: "c"))"
            if case .allOf(let values) = condition.match {
                text += " AND (SELECT count(DISTINCT c.value) \(rows) AND \(match(.oneOf(values), alias: "c")))"
                text += condition.negated ? " < ?" : " = ?"
                arguments.append(Set(values).count)
            } else {
                text += condition.negated ? " AND NOT EXISTS " : " AND EXISTS "
                text += "(SELECT 1 \(rows) AND \(match(condition.match, alias: "c")))"
            }
        }
        var order = [String]()
        for (number, sort) in query.sort.enumerated() {
            let direction = sort.ascending ? "ASC" : "DESC"
            order.append("s\(number).value IS NULL")
            switch sort.order {
            case .value:
                order.append("s\(number).value \(direction)")
            case .distance(let latitude, let longitude):
                order.append("nimbus_distance(s\(number).value, s\(number).longitude, ?, ?) \(direction)")
                arguments += [latitude, longitude]
            }
        }
        order += ["z.name", "e.key"]
        text += " ORDER BY " + order.joined(separator: ", ") + " LIMIT ? OFFSET ?"
        arguments += [query.limit, query.offset]
    }

    /// Rows of any of the fields; with none, no row.
    private mutating func fields(_ fields: [String], of kind: String, alias a: String) -> String {
        guard !fields.isEmpty else { return "0" }
        arguments += fields.map { IndexFieldID.of(kind: kind, field: $0) }
        return fields.count == 1
            ? "\(a).field = ?" : "\(a).field IN (" + Array(repeating: "?", count: fields.count).joined(separator: ", ") + ")"
    }

    private mutating func match(_ match: IndexCondition.Match, alias a: String) -> String {
        func bind(_ value: IndexValue) -> String {
            arguments.append(SQLiteStore.columns(value).value)
            return "?"
        }
        switch match {
        case .equal(let value): return "\(a).value = \(bind(value))"
        case .lessThan(let value): return "\(a).value < \(bind(value))"
        case .lessThanOrEqual(let value): return "\(a).value <= \(bind(value))"
        case .greaterThan(let value): return "\(a).value > \(bind(value))"
        case .greaterThanOrEqual(let value): return "\(a).value >= \(bind(value))"
        case .allOf(let values):
            return self.match(.oneOf(values), alias: a)
        case .oneOf(let values):
            guard !values.isEmpty else { return "0" }
            return "\(a).value IN (" + values.map(bind).joined(separator: ", ") + ")"
        case .prefix(let prefix):
            guard !prefix.isEmpty else { return "typeof(\(a).value) = 'text'" }
            // [prefix, prefix with its last byte raised) holds exactly the texts that begin with it; UTF-8
            // never ends a character with 0xFF, so raising the byte cannot overflow.
            var upper = Array(prefix.utf8)
            upper[upper.count - 1] += 1
            arguments += [prefix, Data(upper)]
            return "\(a).value >= ? AND \(a).value < CAST(? AS TEXT)"
        case .within(let meters, let latitude, let longitude):
            // A latitude band narrows the search through the index; the exact distance decides.
            let band = meters / 110_000 + 0.01
            arguments += [latitude - band, latitude + band, latitude, longitude, meters]
            return "\(a).value BETWEEN ? AND ? AND nimbus_distance(\(a).value, \(a).longitude, ?, ?) <= ?"
        }
    }
}
