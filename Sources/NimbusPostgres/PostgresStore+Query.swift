import Foundation
import NimbusCore
import NimbusStore
import PostgresNIO

extension PostgresStore {
    package func query(_ query: IndexQuery) async throws -> [QueryMatch] {
        guard query.limit > 0, !query.zones.isEmpty else { return [] }
        let zoneIDs = try await rows(
            """
            SELECT z.id FROM zones z
            JOIN unnest(\(query.zones.map(\.accountID))::text[], \(query.zones.map(\.address.service.encoded))::text[],
                \(query.zones.map(\.address.name))::text[]) AS q(a, s, n)
            ON z.account_id = q.a AND z.service = q.s AND z.name = q.n
            """
        ).values(Int64.self)
        guard !zoneIDs.isEmpty else { return [] }
        return try await rows(IndexQuerySQL(query, zoneIDs: zoneIDs).query).map { row in
            let (service, name, key, payload, sequence, audience) = try row.decode(
                (String, String, String, Data?, Int64, String?).self)
            guard let service = ZoneAddress.Service(encoded: service) else { throw StoreError.missing("service \(service)") }
            return QueryMatch(
                zone: ZoneAddress(service: service, name: name),
                entry: Entry(key: key, payload: payload, sequence: sequence, audience: audience))
        }
    }
}

/// The SELECT an `IndexQuery` becomes, as on SQLite: one condition's rows drive the search (the most
/// selective kind of match), the others are checked per candidate, and each sort key is the first row of
/// its field. Values compare as SQLite compares them: numbers by value and before any text, text by its
/// bytes.
private struct IndexQuerySQL {
    private var text = ""
    private var binds = PostgresBindings()

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: binds) }

    init(_ query: IndexQuery, zoneIDs: [Int64]) {
        let driver = query.drivingCondition
        let drivingCondition = driver?.element ?? IndexCondition(field: IndexEntry.keyField, .prefix(""))

        text = "SELECT z.service, z.name, e.key, e.payload, e.sequence, e.audience FROM (SELECT DISTINCT zone_id, sequence "
        text += "FROM entry_index d WHERE d.zone_id = ANY(\(bind(zoneIDs))::bigint[]) AND "
        text += fields(drivingCondition.fields, of: query.kind, alias: "d") + " AND "
        text += match(drivingCondition.match, alias: "d") + ") m "
        text += "JOIN entries e ON e.zone_id = m.zone_id AND e.sequence = m.sequence JOIN zones z ON z.id = e.zone_id "
        for (number, sort) in query.sort.enumerated() {
            text += "LEFT JOIN entry_index s\(number) ON s\(number).zone_id = e.zone_id AND s\(number).sequence = e.sequence "
            text +=
                "AND s\(number).field = \(bind(IndexFieldID.of(kind: query.kind, field: sort.field))) AND s\(number).position = 0 "
        }
        text += "WHERE e.payload IS NOT NULL"
        for (number, condition) in query.conditions.enumerated() where number != driver?.offset {
            let rows =
                "FROM entry_index c WHERE c.zone_id = e.zone_id AND c.sequence = e.sequence AND "
                + fields(condition.fields, of: query.kind, alias: "c")
            if case .allOf(let values) = condition.match {
                text += " AND (SELECT count(DISTINCT (c.number, c.text)) \(rows) AND \(match(.oneOf(values), alias: "c")))"
                text += (condition.negated ? " < " : " = ") + bind(Int64(Set(values).count))
            } else {
                text += condition.negated ? " AND NOT EXISTS " : " AND EXISTS "
                text += "(SELECT 1 \(rows) AND \(match(condition.match, alias: "c")))"
            }
        }
        var order = [String]()
        for (number, sort) in query.sort.enumerated() {
            let s = "s\(number)"
            // Entries without the field last, whichever the direction (SQLite's `value IS NULL` first key).
            order.append("(\(s).number IS NULL AND \(s).text IS NULL)")
            let direction = sort.ascending ? "ASC" : "DESC"
            switch sort.order {
            case .value:
                order.append("\(s).text IS NOT NULL \(direction)")
                order.append("\(s).number \(direction)")
                order.append("\(s).text \(direction)")
            case .distance(let latitude, let longitude):
                // SQLite orders a missing distance (not a point) before every distance.
                order.append(
                    "nimbus_distance(\(s).number::float8, \(s).longitude, \(bind(latitude)), \(bind(longitude))) \(direction) "
                        + (sort.ascending ? "NULLS FIRST" : "NULLS LAST"))
            }
        }
        order += ["z.name", "e.key"]
        text += " ORDER BY " + order.joined(separator: ", ")
        text += " LIMIT \(bind(Int64(query.limit))) OFFSET \(bind(Int64(query.offset)))"
    }

    private mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    /// Rows of any of the fields; with none, no row.
    private mutating func fields(_ fields: [String], of kind: String, alias a: String) -> String {
        guard !fields.isEmpty else { return "false" }
        return "\(a).field = ANY(\(bind(fields.map { IndexFieldID.of(kind: kind, field: $0) }))::bigint[])"
    }

    /// The column a value is compared in, with the value bound.
    private mutating func operand(_ value: IndexValue, alias a: String) -> (column: String, value: String, isText: Bool) {
        let columns = IndexColumns(value)
        return columns.isText
            ? ("\(a).text", bind(columns.value), true) : ("\(a).number", "\(bind(columns.value))::numeric", false)
    }

    /// `column < value` (or another order) as SQLite compares mixed values: every number is less than every text.
    private mutating func compare(_ value: IndexValue, _ comparison: String, alias a: String) -> String {
        let (column, bound, isText) = operand(value, alias: a)
        let below = comparison.hasPrefix("<")
        switch (isText, below) {
        case (true, true): return "(\(a).number IS NOT NULL OR \(column) \(comparison) \(bound))"
        case (false, false): return "(\(a).text IS NOT NULL OR \(column) \(comparison) \(bound))"
        default: return "\(column) \(comparison) \(bound)"
        }
    }

    private mutating func match(_ match: IndexCondition.Match, alias a: String) -> String {
        switch match {
        case .equal(let value):
            let (column, bound, _) = operand(value, alias: a)
            return "\(column) = \(bound)"
        case .lessThan(let value): return compare(value, "<", alias: a)
        case .lessThanOrEqual(let value): return compare(value, "<=", alias: a)
        case .greaterThan(let value): return compare(value, ">", alias: a)
        case .greaterThanOrEqual(let value): return compare(value, ">=", alias: a)
        case .allOf(let values):
            return self.match(.oneOf(values), alias: a)
        case .oneOf(let values):
            guard !values.isEmpty else { return "false" }
            return "(" + values.map { self.match(.equal($0), alias: a) }.joined(separator: " OR ") + ")"
        case .prefix(let prefix):
            // PostgreSQL's text holds no NUL, so no indexed text begins with a prefix holding one.
            guard !prefix.utf8.contains(0) else { return "false" }
            guard !prefix.isEmpty else { return "\(a).text IS NOT NULL" }
            let bound = bind(prefix)
            return "(\(a).text >= \(bound) AND starts_with(\(a).text, \(bound)))"
        case .within(let meters, let latitude, let longitude):
            // A latitude band narrows the search through the index; the exact distance decides.
            let band = meters / 110_000 + 0.01
            return "\(a).number BETWEEN \(bind(IndexColumns.numeric(latitude - band)))::numeric AND "
                + "\(bind(IndexColumns.numeric(latitude + band)))::numeric AND "
                + "nimbus_distance(\(a).number::float8, \(a).longitude, \(bind(latitude)), \(bind(longitude))) <= \(bind(meters))"
        }
    }
}
