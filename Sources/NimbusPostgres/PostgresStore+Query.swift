import Foundation
import NimbusCore
import NimbusStore
import PostgresNIO

extension PostgresStore {
    package func query(_ query: IndexQuery) async throws -> [QueryMatch] {
        guard query.limit > 0, !query.zones.isEmpty else { return [] }
        let zones = try await rows(
            """
            SELECT DISTINCT z.id, z.name FROM zones z
            JOIN unnest(\(query.zones.map(\.accountID))::text[], \(query.zones.map(\.address.service.encoded))::text[],
                \(query.zones.map(\.address.name))::text[]) AS q(a, s, n)
            ON z.account_id = q.a AND z.service = q.s AND z.name = q.n
            """
        ).map { try $0.decode((Int64, String).self) }.map { (id: $0.0, name: $0.1) }
        guard !zones.isEmpty else { return [] }
        if zones.count == 1, query.sort.count == 1, query.sort[0].order == .value, query.drivingCondition == nil {
            return try await sortedByIndex(query, zoneID: zones[0].id)
        }
        guard query.sort.isEmpty else {
            return try await matches(IndexQuerySQL(query, zoneIDs: zones.map(\.id), after: query.after, limit: query.limit))
        }
        // Unsorted, the order is by zone, then key: zone by zone, each in key order, which the index gives
        // without sorting when no condition narrows the search.
        var matches = [QueryMatch]()
        for zone in try ZoneOrder(zones, after: query.after).zones {
            matches += try await self.matches(
                IndexQuerySQL(query, zoneIDs: [zone.id], after: zone.after, limit: query.limit - matches.count))
            if matches.count == query.limit { break }
        }
        return matches
    }

    /// One zone sorted by one field's values with no condition to drive the search: the field's indexes
    /// give the order, so a page reads its own rows. Numbers come before text ascending and after it
    /// descending, each from its own index; then the entries without the field, in key order. Their
    /// positions are those the general statement gives.
    private func sortedByIndex(_ query: IndexQuery, zoneID: Int64) async throws -> [QueryMatch] {
        var phases: [IndexQuerySQL.Shape] =
            query.sort[0].ascending ? [.sortFieldNumbers, .sortFieldTexts] : [.sortFieldTexts, .sortFieldNumbers]
        phases.append(.missingSortField)
        var after = query.after
        if let position = after {
            // The phase the position is in: (missing, text?, number, text, zone, key) as the general statement's.
            guard position.values.count == 6 else { throw StoreError.foreignPosition }
            let current: IndexQuerySQL.Shape =
                position.values[0] == .text("true")
                ? .missingSortField : position.values[1] == .text("true") ? .sortFieldTexts : .sortFieldNumbers
            phases.removeFirst(phases.firstIndex(of: current) ?? 0)
            if current == .missingSortField { after = QueryPosition([position.values[5]]) }
        }
        var matches = [QueryMatch]()
        for phase in phases {
            let sql = try IndexQuerySQL(query, zoneIDs: [zoneID], after: after, limit: query.limit - matches.count, shape: phase)
            matches += try await self.matches(sql)
            if matches.count == query.limit { break }
            after = nil
        }
        return matches
    }

    private func matches(_ sql: IndexQuerySQL) async throws -> [QueryMatch] {
        try await rows(sql.query).map { row in
            let columns = row.makeRandomAccess()
            let (service, name, key, payload, sequence, audience) = try row.decode(
                (String, String, String, Data?, Int64, String?).self)
            guard let service = ZoneAddress.Service(encoded: service) else { throw StoreError.missing("service \(service)") }
            var position = try (0..<sql.orderKeys.count).map { number in
                try columns["o\(number)"].decode(String?.self).map(QueryPosition.Value.text) ?? .null
            }
            if !sql.ordersByZone { position.insert(.text(name), at: position.count - 1) }
            position.insert(contentsOf: sql.positionPrefix, at: 0)
            return QueryMatch(
                zone: ZoneAddress(service: service, name: name),
                entry: Entry(key: key, payload: payload, sequence: sequence, audience: audience),
                position: QueryPosition(position))
        }
    }
}

/// The SELECT an `IndexQuery` becomes, as on SQLite: one condition's rows drive the search (the most
/// selective kind of match), the others are checked per candidate, each sort key is the first row of its
/// field, and with neither a driving condition nor a sort key the key field's rows drive it in key order
/// from the index. Values compare as SQLite compares them: numbers by value and before any text, text by
/// its bytes. The order keys are selected as text (`o0`, `o1`, …: the matches' positions) and a position's
/// values bound back as their keys' types.
private struct IndexQuerySQL {
    private var text = ""
    private var binds = PostgresBindings()
    private(set) var orderKeys = [OrderKeySQL]()
    /// Each order key's type, which a position's text is read back as.
    private var orderTypes = [String]()
    /// Whether the order keys hold the zone's name: sorted queries order several zones' entries together;
    /// unsorted ones read one zone at a time.
    let ordersByZone: Bool
    /// Leading values of every match's position that are the same for all of this statement's matches.
    private(set) var positionPrefix = [QueryPosition.Value]()

    var query: PostgresQuery { PostgresQuery(unsafeSQL: text, binds: binds) }

    /// Which statement: the general one, or a part of a zone sorted by one field's indexes
    /// (`PostgresStore.sortedByIndex`). The parts holding the field select the general statement's order
    /// keys (the positions) but order by the index's column alone, with its own NULL placement.
    enum Shape: Equatable {
        case general
        case sortFieldNumbers
        case sortFieldTexts
        /// The entries without the field, in key order; their positions begin as the general ones do.
        case missingSortField
    }

    init(_ query: IndexQuery, zoneIDs: [Int64], after: QueryPosition?, limit: Int, shape: Shape = .general) throws(StoreError) {
        ordersByZone = !query.sort.isEmpty && shape != .missingSortField
        // One zone as `=`, for the same reason as one field.
        let zones = zoneIDs.count == 1 ? "= \(bind(zoneIDs[0]))" : "= ANY(\(bind(zoneIDs))::bigint[])"
        let driver = query.drivingCondition
        var from: String
        var orderBy: [OrderKeySQL]?
        if shape == .sortFieldNumbers || shape == .sortFieldTexts, let sort = query.sort.first {
            let (column, type) = shape == .sortFieldNumbers ? ("s0.number", "numeric") : ("s0.text", "text")
            from = "entry_index s0 JOIN entries e ON e.zone_id = s0.zone_id AND e.sequence = s0.sequence "
            from += "JOIN zones z ON z.id = e.zone_id WHERE s0.zone_id \(zones) AND "
            from += fields([sort.field], of: query.kind, alias: "s0") + " AND s0.position = 0 AND \(column) IS NOT NULL"
            order("(s0.number IS NULL AND s0.text IS NULL)", "boolean", nullable: false)
            order("s0.text IS NOT NULL", "boolean", ascending: sort.ascending, nullable: false)
            order("s0.number", "numeric", ascending: sort.ascending)
            order("s0.text", "text", ascending: sort.ascending)
            order("z.name", "text", nullable: false)
            order("e.key", "text", nullable: false)
            orderBy = [OrderKeySQL(column, ascending: sort.ascending, nullable: false)] + orderKeys.suffix(2)
            // Where the index's range starts: the position's own value (the keyset condition does the rest).
            let valueIndex = shape == .sortFieldNumbers ? 2 : 3
            if let after, after.values.count == 6, let value = try bind(after.values[valueIndex], as: type) {
                from += " AND \(column) \(sort.ascending ? ">=" : "<=") \(value)"
            }
        } else if shape == .missingSortField, let sort = query.sort.first {
            from = "entry_index d JOIN entries e ON e.zone_id = d.zone_id AND e.sequence = d.sequence "
            from += "JOIN zones z ON z.id = e.zone_id WHERE d.zone_id \(zones) AND "
            from += fields([IndexEntry.keyField], of: query.kind, alias: "d") + " AND d.text IS NOT NULL"
            from += " AND NOT EXISTS (SELECT 1 FROM entry_index s0 WHERE s0.zone_id = d.zone_id AND s0.sequence = d.sequence AND "
            from += fields([sort.field], of: query.kind, alias: "s0") + " AND s0.position = 0)"
            order("d.text", "text", nullable: false)
            positionPrefix = [.text("true"), .text("false"), .null, .null]
        } else if driver == nil, query.sort.isEmpty {
            from = "entry_index d JOIN entries e ON e.zone_id = d.zone_id AND e.sequence = d.sequence "
            from += "JOIN zones z ON z.id = e.zone_id WHERE d.zone_id \(zones) AND "
            from += fields([IndexEntry.keyField], of: query.kind, alias: "d") + " AND d.text IS NOT NULL"
            order("d.text", "text", nullable: false)
        } else {
            let drivingCondition = driver?.element ?? IndexCondition(field: IndexEntry.keyField, .prefix(""))
            from = "(SELECT DISTINCT zone_id, sequence FROM entry_index d WHERE d.zone_id \(zones) AND "
            from += fields(drivingCondition.fields, of: query.kind, alias: "d") + " AND "
            from += match(drivingCondition.match, alias: "d") + ") m "
            from += "JOIN entries e ON e.zone_id = m.zone_id AND e.sequence = m.sequence JOIN zones z ON z.id = e.zone_id "
            for (number, sort) in query.sort.enumerated() {
                let s = "s\(number)"
                from += "LEFT JOIN entry_index \(s) ON \(s).zone_id = e.zone_id AND \(s).sequence = e.sequence "
                from += "AND \(s).field = \(bind(IndexFieldID.of(kind: query.kind, field: sort.field))) AND \(s).position = 0 "
                // Entries without the field last, whichever the direction (SQLite's `value IS NULL` first key).
                order("(\(s).number IS NULL AND \(s).text IS NULL)", "boolean", nullable: false)
                switch sort.order {
                case .value:
                    order("\(s).text IS NOT NULL", "boolean", ascending: sort.ascending, nullable: false)
                    order("\(s).number", "numeric", ascending: sort.ascending)
                    order("\(s).text", "text", ascending: sort.ascending)
                case .distance(let latitude, let longitude):
                    order(
                        "nimbus_distance(\(s).number::float8, \(s).longitude, \(bind(latitude)), \(bind(longitude)))", "float8",
                        ascending: sort.ascending)
                }
            }
            if ordersByZone { order("z.name", "text", nullable: false) }
            order("e.key", "text", nullable: false)
            from += "WHERE TRUE"
        }
        from += " AND e.payload IS NOT NULL"
        for (number, condition) in query.conditions.enumerated() where number != driver?.offset {
            let rows =
                "FROM entry_index c WHERE c.zone_id = e.zone_id AND c.sequence = e.sequence AND "
                + fields(condition.fields, of: query.kind, alias: "c")
            if case .allOf(let values) = condition.match {
                from += " AND (SELECT count(DISTINCT (c.number, c.text)) \(rows) AND \(match(.oneOf(values), alias: "c")))"
                from += (condition.negated ? " < " : " = ") + bind(Int64(Set(values).count))
            } else {
                from += condition.negated ? " AND NOT EXISTS " : " AND EXISTS "
                from += "(SELECT 1 \(rows) AND \(match(condition.match, alias: "c")))"
            }
        }
        if let after {
            guard after.values.count == orderKeys.count else { throw .foreignPosition }
            var bound = [String?]()
            for (value, type) in zip(after.values, orderTypes) { bound.append(try bind(value, as: type)) }
            from += " AND " + orderKeys.after(bound)
        }
        let positions = orderKeys.enumerated().map { "(\($0.element.expression))::text AS o\($0.offset)" }.joined(separator: ", ")
        text = "SELECT z.service, z.name, e.key, e.payload, e.sequence, e.audience, \(positions) FROM \(from)"
        text += " ORDER BY \((orderBy ?? orderKeys).orderBy(spellingNulls: true)) LIMIT \(bind(Int64(limit)))"
    }

    private mutating func order(_ expression: String, _ type: String, ascending: Bool = true, nullable: Bool = true) {
        orderKeys.append(OrderKeySQL(expression, ascending: ascending, nullable: nullable))
        orderTypes.append(type)
    }

    /// A position's value bound as its key's type; nil for NULL, which the order compares by IS NULL. Text
    /// that is not a value of the type is no position of this query's.
    private mutating func bind(_ value: QueryPosition.Value, as type: String) throws(StoreError) -> String? {
        guard case .text(let text) = value else {
            guard value == .null else { throw .foreignPosition }
            return nil
        }
        let valid: Bool
        switch type {
        case "boolean": valid = text == "true" || text == "false"
        case "numeric": valid = text.wholeMatch(of: /-?[0-9]+(\.[0-9]+)?/) != nil
        case "float8": valid = Double(text) != nil
        default: valid = !text.utf8.contains(0)
        }
        guard valid else { throw .foreignPosition }
        return "\(bind(text))::\(type)"
    }

    private mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    /// Rows of any of the fields; with none, no row.
    private mutating func fields(_ fields: [String], of kind: String, alias a: String) -> String {
        guard !fields.isEmpty else { return "false" }
        // One field as `=`: with `= ANY` PostgreSQL 15 does not read the index in order.
        guard fields.count > 1 else { return "\(a).field = \(bind(IndexFieldID.of(kind: kind, field: fields[0])))" }
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
