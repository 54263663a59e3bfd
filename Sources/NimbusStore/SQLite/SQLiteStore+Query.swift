import Foundation
import GRDB
import NimbusCore
import Synchronization

extension SQLiteStore {
    package func query(_ query: IndexQuery) async throws -> [QueryMatch] {
        try await read { db in
            var zones = [(id: Int64, name: String)]()
            for zone in query.zones {
                if let id = try Self.zoneID(of: zone, db), !zones.contains(where: { $0.id == id }) {
                    zones.append((id, zone.address.name))
                }
            }
            guard !zones.isEmpty, query.limit > 0 else { return [] }
            if zones.count == 1, query.sort.count == 1, query.sort[0].order == .value, query.drivingCondition == nil {
                return try Self.sortedByIndex(query, zone: zones[0], db)
            }
            guard query.sort.isEmpty else {
                return try Self.matches(
                    IndexQuerySQL(query, zoneIDs: zones.map(\.id), after: query.after, limit: query.limit), db)
            }
            // Unsorted, the order is by zone, then key: zone by zone, each in key order, which the index
            // gives without sorting when no condition narrows the search.
            var matches = [QueryMatch]()
            for zone in try ZoneOrder(zones, after: query.after).zones {
                let sql = try IndexQuerySQL(query, zoneIDs: [zone.id], after: zone.after, limit: query.limit - matches.count)
                matches += try Self.matches(sql, db)
                if matches.count == query.limit { break }
            }
            return matches
        }
    }

    /// One zone sorted by one field's values with no condition to drive the search: the field's index gives
    /// the order, so a page reads its own rows. First the entries holding the field, in its order; then
    /// those without it, in key order. Their positions are those the general query gives.
    private static func sortedByIndex(_ query: IndexQuery, zone: (id: Int64, name: String), _ db: Database) throws
        -> [QueryMatch]
    {
        var matches = [QueryMatch]()
        var missingAfter: QueryPosition?
        if let after = query.after {
            guard after.values.count == 4 else { throw StoreError.foreignPosition }
            if after.values[0] == .integer(1) { missingAfter = QueryPosition([after.values[3]]) }
        }
        if missingAfter == nil {
            let sql = try IndexQuerySQL(
                query, zoneIDs: [zone.id], after: query.after, limit: query.limit, shape: .holdingSortField)
            matches = try Self.matches(sql, db)
        }
        if matches.count < query.limit {
            let sql = try IndexQuerySQL(
                query, zoneIDs: [zone.id], after: missingAfter, limit: query.limit - matches.count, shape: .missingSortField)
            matches += try Self.matches(sql, db)
        }
        return matches
    }

    private static func matches(_ sql: IndexQuerySQL, _ db: Database) throws -> [QueryMatch] {
        try Row.fetchAll(try statement(sql.text, db), arguments: StatementArguments(sql.arguments)).map { row in
            let zone = ZoneAddress(service: try Self.service(row["service"]), name: row["name"])
            var position = [QueryPosition.Value]()
            for number in sql.orderKeys.indices {
                switch (row["o\(number)"] as DatabaseValue).storage {
                case .null: position.append(.null)
                case .int64(let integer): position.append(.integer(integer))
                case .double(let real): position.append(.real(real))
                case .string(let text): position.append(.text(text))
                // Never stored: `columns` writes index values as integers, reals and text, and keys are text.
                case .blob: throw StoreError.foreignPosition
                }
            }
            if !sql.ordersByZone { position.insert(.text(zone.name), at: position.count - 1) }
            position.insert(contentsOf: sql.positionPrefix, at: 0)
            return QueryMatch(
                zone: zone,
                entry: Entry(key: row["key"], payload: row["payload"], sequence: row["sequence"], audience: row["audience"]),
                position: QueryPosition(position))
        }
    }

    /// The most query texts whose statements a connection keeps prepared.
    static let maxPreparedQueryTexts = 256
    private static let preparedQueryTexts = Mutex<Set<String>>([])

    /// An index query's statement, prepared once per connection: its text depends only on the query's shape
    /// (every value is a parameter), and parsing it cost as much as running it (a tenth of a WebDAV PUT's
    /// time). The first `maxPreparedQueryTexts` texts seen are kept; others, as queries of many shapes (long
    /// `IN` lists) make, are prepared each time, so the connections' caches cannot grow without bound.
    private static func statement(_ text: String, _ db: Database) throws -> Statement {
        let kept = preparedQueryTexts.withLock { texts in
            if texts.contains(text) { return true }
            guard texts.count < maxPreparedQueryTexts else { return false }
            texts.insert(text)
            return true
        }
        return kept ? try db.cachedStatement(sql: text) : try db.makeStatement(sql: text)
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

/// The SELECT an `IndexQuery` becomes. One condition's rows drive the search (the most selective kind of
/// match), the others are checked per candidate through the index's primary key, and each sort key is the
/// first row of its field. With neither a driving condition nor a sort key, the key field's rows drive it
/// in key order straight from the index, so a page reads its own rows only. The order keys are selected as
/// `o0`, `o1`, … (the matches' positions); parameters are numbered (`?1`), so a key named twice binds once.
private struct IndexQuerySQL {
    var text = ""
    var arguments = [DatabaseValueConvertible?]()
    var orderKeys = [OrderKeySQL]()
    /// Whether the order keys hold the zone's name: sorted queries order several zones' entries together;
    /// unsorted ones read one zone at a time.
    let ordersByZone: Bool
    /// Leading values of every match's position that are the same for all of this statement's matches.
    var positionPrefix = [QueryPosition.Value]()

    /// Which statement: the general one, or one of the two halves of a zone sorted by one field's index
    /// (`SQLiteStore.sortedByIndex`).
    enum Shape {
        case general
        /// The entries holding the sort field, read from its index in order; positions as the general
        /// statement's (`value IS NULL`, value, zone, key), the first key left out of the ORDER BY (it is
        /// never true here), which lets the index give the order.
        case holdingSortField
        /// The entries without it, in key order; their positions begin `1, NULL` as the general ones do.
        case missingSortField
    }

    init(_ query: IndexQuery, zoneIDs: [Int64], after: QueryPosition?, limit: Int, shape: Shape = .general) throws(StoreError) {
        ordersByZone = !query.sort.isEmpty && shape != .missingSortField
        let zones = zoneIDs.map { bind($0) }.joined(separator: ", ")
        let driver = query.drivingCondition
        var from: String
        var orderBy: [OrderKeySQL]?
        if shape == .holdingSortField, let sort = query.sort.first {
            from = "entry_index s0 JOIN entries e ON e.zone_id = s0.zone_id AND e.sequence = s0.sequence "
            from += "JOIN zones z ON z.id = e.zone_id WHERE s0.zone_id IN (\(zones)) AND "
            from += fields([sort.field], of: query.kind, alias: "s0") + " AND s0.position = 0"
            orderKeys = [
                OrderKeySQL("s0.value IS NULL"), OrderKeySQL("s0.value", ascending: sort.ascending), OrderKeySQL("z.name"),
                OrderKeySQL("e.key"),
            ]
            orderBy = Array(orderKeys.dropFirst())
            // Where the index's range starts: the position's own value (the keyset condition does the rest).
            if let after, after.values.count == 4, after.values[0] == .integer(0), let value = bind(after.values[1]) {
                from += " AND s0.value \(sort.ascending ? ">=" : "<=") \(value)"
            }
        } else if shape == .missingSortField, let sort = query.sort.first {
            from = "entry_index d JOIN entries e ON e.zone_id = d.zone_id AND e.sequence = d.sequence "
            from += "JOIN zones z ON z.id = e.zone_id WHERE d.zone_id IN (\(zones)) AND "
            from += fields([IndexEntry.keyField], of: query.kind, alias: "d")
            from += " AND NOT EXISTS (SELECT 1 FROM entry_index s0 WHERE s0.zone_id = d.zone_id AND s0.sequence = d.sequence AND "
            from += fields([sort.field], of: query.kind, alias: "s0") + " AND s0.position = 0)"
            orderKeys = [OrderKeySQL("d.value")]
            positionPrefix = [.integer(1), .null]
        } else if driver == nil, query.sort.isEmpty {
            from = "entry_index d JOIN entries e ON e.zone_id = d.zone_id AND e.sequence = d.sequence "
            from += "JOIN zones z ON z.id = e.zone_id WHERE d.zone_id IN (\(zones)) AND "
            from += fields([IndexEntry.keyField], of: query.kind, alias: "d")
            orderKeys = [OrderKeySQL("d.value")]
        } else {
            let drivingCondition = driver?.element ?? IndexCondition(field: IndexEntry.keyField, .prefix(""))
            from = "(SELECT DISTINCT zone_id, sequence FROM entry_index d WHERE d.zone_id IN (\(zones)) AND "
            from += fields(drivingCondition.fields, of: query.kind, alias: "d") + " AND "
            from += match(drivingCondition.match, alias: "d") + ") m "
            from += "JOIN entries e ON e.zone_id = m.zone_id AND e.sequence = m.sequence JOIN zones z ON z.id = e.zone_id "
            for (number, sort) in query.sort.enumerated() {
                let s = "s\(number)"
                from += "LEFT JOIN entry_index \(s) ON \(s).zone_id = e.zone_id AND \(s).sequence = e.sequence "
                from += "AND \(s).field = \(bind(IndexFieldID.of(kind: query.kind, field: sort.field))) AND \(s).position = 0 "
                // Entries without the field last, whichever the direction.
                orderKeys.append(OrderKeySQL("\(s).value IS NULL"))
                switch sort.order {
                case .value:
                    orderKeys.append(OrderKeySQL("\(s).value", ascending: sort.ascending))
                case .distance(let latitude, let longitude):
                    orderKeys.append(
                        OrderKeySQL(
                            "nimbus_distance(\(s).value, \(s).longitude, \(bind(latitude)), \(bind(longitude)))",
                            ascending: sort.ascending))
                }
            }
            orderKeys += (ordersByZone ? [OrderKeySQL("z.name")] : []) + [OrderKeySQL("e.key")]
            from += "WHERE 1"
        }
        from += " AND e.payload IS NOT NULL"
        for (number, condition) in query.conditions.enumerated() where number != driver?.offset {
            let rows =
                "FROM entry_index c WHERE c.zone_id = e.zone_id AND c.sequence = e.sequence AND \(fields(condition.fields, of: query.kind, alias: "c"))"
            if case .allOf(let values) = condition.match {
                from += " AND (SELECT count(DISTINCT c.value) \(rows) AND \(match(.oneOf(values), alias: "c")))"
                from += (condition.negated ? " < " : " = ") + bind(Set(values).count)
            } else {
                from += condition.negated ? " AND NOT EXISTS " : " AND EXISTS "
                from += "(SELECT 1 \(rows) AND \(match(condition.match, alias: "c")))"
            }
        }
        if let after {
            guard after.values.count == orderKeys.count else { throw .foreignPosition }
            var bound = [String?]()
            for value in after.values { bound.append(bind(value)) }
            from += " AND " + orderKeys.after(bound)
        }
        let positions = orderKeys.enumerated().map { "\($0.element.expression) AS o\($0.offset)" }.joined(separator: ", ")
        text = "SELECT z.service, z.name, e.key, e.payload, e.sequence, e.audience, \(positions) FROM \(from)"
        text += " ORDER BY \((orderBy ?? orderKeys).orderBy(spellingNulls: false)) LIMIT \(bind(limit))"
    }

    /// A parameter holding the value, by number.
    private mutating func bind(_ value: DatabaseValueConvertible?) -> String {
        arguments.append(value)
        return "?\(arguments.count)"
    }

    /// A position's value as a parameter; nil for NULL, which the order compares by IS NULL.
    private mutating func bind(_ value: QueryPosition.Value) -> String? {
        switch value {
        case .null: nil
        case .integer(let integer): bind(integer)
        case .real(let real): bind(real)
        case .text(let text): bind(text)
        }
    }

    /// Rows of any of the fields; with none, no row.
    private mutating func fields(_ fields: [String], of kind: String, alias a: String) -> String {
        guard !fields.isEmpty else { return "0" }
        let bound = fields.map { bind(IndexFieldID.of(kind: kind, field: $0)) }
        return bound.count == 1 ? "\(a).field = \(bound[0])" : "\(a).field IN (" + bound.joined(separator: ", ") + ")"
    }

    private mutating func match(_ match: IndexCondition.Match, alias a: String) -> String {
        func bind(_ value: IndexValue) -> String { self.bind(SQLiteStore.columns(value).value) }
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
            return "\(a).value >= \(self.bind(prefix)) AND \(a).value < CAST(\(self.bind(Data(upper))) AS TEXT)"
        case .within(let meters, let latitude, let longitude):
            // A latitude band narrows the search through the index; the exact distance decides.
            let band = meters / 110_000 + 0.01
            return "\(a).value BETWEEN \(self.bind(latitude - band)) AND \(self.bind(latitude + band)) AND "
                + "nimbus_distance(\(a).value, \(a).longitude, \(self.bind(latitude)), \(self.bind(longitude))) <= \(self.bind(meters))"
        }
    }
}
