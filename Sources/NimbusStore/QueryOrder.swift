import Foundation

/// Where an entry stands in a query's order: the values of the backend's order keys for it (the sort keys'
/// as that backend spells them), ending with the zone's name and the entry's key. A query given one
/// continues after it, reading only the rows that follow through the order (keyset paging), so the
/// 10,000th page costs what the first does. A backend reads only positions of its own shape and refuses
/// others with `StoreError.foreignPosition`.
package struct QueryPosition: Sendable, Hashable, Codable {
    package enum Value: Sendable, Hashable {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
    }

    package var values: [Value]

    package init(_ values: [Value]) {
        self.values = values
    }

    // Compact for continuation markers: each value a tagged string ("i42", "r0.5", "tName") or null.
    package init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        var values = [Value]()
        while !container.isAtEnd {
            guard let tagged = try container.decodeNil() ? nil : container.decode(String.self) else {
                values.append(.null)
                continue
            }
            let body = String(tagged.dropFirst())
            switch tagged.first {
            case "i": guard let integer = Int64(body) else { throw StoreError.foreignPosition }; values.append(.integer(integer))
            case "r":
                guard let real = Double(body), real.isFinite else { throw StoreError.foreignPosition }; values.append(.real(real))
            case "t": values.append(.text(body))
            default: throw StoreError.foreignPosition
            }
        }
        self.values = values
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for value in values {
            switch value {
            case .null: try container.encodeNil()
            case .integer(let integer): try container.encode("i\(integer)")
            case .real(let real): try container.encode("r\(real)")
            case .text(let text): try container.encode("t\(text)")
            }
        }
    }
}

/// One key of a query's ORDER BY in SQL. NULL sorts before every value ascending and after every value
/// descending, as SQLite orders it (the PostgreSQL backend says so explicitly for keys that can be NULL).
package struct OrderKeySQL: Sendable {
    package var expression: String
    package var ascending: Bool
    /// Whether the key can be NULL. PostgreSQL reads an index in order only for its own NULL placement
    /// (`ASC NULLS LAST`), so a key that is never NULL must not spell another.
    package var nullable: Bool

    package init(_ expression: String, ascending: Bool = true, nullable: Bool = true) {
        self.expression = expression
        self.ascending = ascending
        self.nullable = nullable
    }
}

extension [OrderKeySQL] {
    /// The condition that a row comes after a position whose values are bound as `values` (nil where the
    /// position holds NULL): later on the first key, or the same on it and later on the rest. Rows the
    /// same on every key are not after (the last key, an entry's key within its zone, is unique).
    package func after(_ values: [String?]) -> String {
        precondition(values.count == count)
        var condition: String?
        for (key, value) in zip(self, values).reversed() {
            let column = "(\(key.expression))"  // an expression such as `a IS NULL` binds looser than `>`
            let later: String
            let same: String
            if let value {
                later = key.ascending ? "\(column) > \(value)" : "(\(column) < \(value) OR \(column) IS NULL)"
                same = "\(column) = \(value)"
            } else {
                later = key.ascending ? "\(column) IS NOT NULL" : "FALSE"
                same = "\(column) IS NULL"
            }
            // The last key alone stays a plain comparison, which an index's range can serve.
            condition = condition.map { "(\(later) OR (\(same) AND \($0)))" } ?? later
        }
        return condition ?? "FALSE"
    }

    /// The ORDER BY list, with each key's place for NULL spelled out when the backend needs it.
    package func orderBy(spellingNulls: Bool) -> String {
        map { key in
            let direction = key.ascending ? "ASC" : "DESC"
            guard spellingNulls, key.nullable else { return "\(key.expression) \(direction)" }
            return "\(key.expression) \(direction) " + (key.ascending ? "NULLS FIRST" : "NULLS LAST")
        }
        .joined(separator: ", ")
    }
}

/// The zones an unsorted query reads, in its order (by name, compared as the backends compare text: by
/// UTF-8 bytes), each with where its reading starts: the zones before the position's are done, the
/// position's continues after its key (a position of one value), later ones start at their beginning.
package struct ZoneOrder<ID: Sendable>: Sendable {
    package var zones: [(id: ID, after: QueryPosition?)] = []

    package init(_ zones: [(id: ID, name: String)], after: QueryPosition?) throws(StoreError) {
        var from: (zone: String, key: String)?
        if let after {
            guard after.values.count == 2, case .text(let zone) = after.values[0], case .text(let key) = after.values[1] else {
                throw .foreignPosition
            }
            from = (zone, key)
        }
        for zone in zones.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
            guard let from else {
                self.zones.append((zone.id, nil))
                continue
            }
            if zone.name.utf8.elementsEqual(from.zone.utf8) {
                self.zones.append((zone.id, QueryPosition([.text(from.key)])))
            } else if from.zone.utf8.lexicographicallyPrecedes(zone.name.utf8) {
                self.zones.append((zone.id, nil))
            }
        }
    }
}
