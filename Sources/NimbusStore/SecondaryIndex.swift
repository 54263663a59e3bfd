import Foundation
import NimbusCore

/// A value an entry is indexed under. The store compares values of one case with each other only, so a
/// service indexes each field under one case (integers, reals, text) or as a point.
package enum IndexValue: Sendable, Hashable {
    case integer(Int64)
    case real(Double)
    case text(String)
    /// A position on Earth, queried by distance.
    case point(latitude: Double, longitude: Double)
}

/// One row of an entry's secondary index: `field` holds `value`; list fields have a row per element,
/// numbered by `position`.
package struct IndexEntry: Sendable, Hashable {
    package var field: String
    package var position: Int
    package var value: IndexValue

    /// The field every indexed entry has a row under, holding its key: queries by kind alone, and
    /// conditions on keys, use it.
    package static let keyField = ""

    package init(field: String, position: Int = 0, value: IndexValue) {
        self.field = field
        self.position = position
        self.value = value
    }
}

/// A condition on indexed fields: holds when some row of one of the fields matches (or, negated, when none
/// does).
package struct IndexCondition: Sendable, Hashable {
    package enum Match: Sendable, Hashable {
        case equal(IndexValue)
        case lessThan(IndexValue), lessThanOrEqual(IndexValue)
        case greaterThan(IndexValue), greaterThanOrEqual(IndexValue)
        case oneOf([IndexValue])
        /// The field has a row for every one of the values.
        case allOf([IndexValue])
        case prefix(String)
        /// Within `meters` of a point (great-circle distance).
        case within(meters: Double, latitude: Double, longitude: Double)
    }

    /// The fields whose rows are searched together, e.g. the words of every searchable text field.
    package var fields: [String]
    package var match: Match
    package var negated: Bool

    package init(field: String, _ match: Match, negated: Bool = false) {
        self.init(anyOf: [field], match, negated: negated)
    }

    package init(anyOf fields: [String], _ match: Match, negated: Bool = false) {
        self.fields = fields
        self.match = match
        self.negated = negated
    }
}

/// An ordering by an indexed field (its first row); entries without the field sort last.
package struct IndexSort: Sendable, Hashable {
    package enum Order: Sendable, Hashable {
        case value
        /// By distance from a point, nearest first when ascending.
        case distance(latitude: Double, longitude: Double)
    }

    package var field: String
    package var ascending: Bool
    package var order: Order

    package init(field: String, ascending: Bool = true, order: Order = .value) {
        self.field = field
        self.ascending = ascending
        self.order = order
    }
}

/// A query over the live entries of one kind in some zones of an account: every condition must hold.
/// Matches come in the order of the sort keys, then by zone name and key; a query with `after` continues
/// after that position (the last match of the page before), so every page costs what the first does.
package struct IndexQuery: Sendable, Hashable {
    package var zones: [ZoneKey]
    package var kind: String
    package var conditions: [IndexCondition]
    package var sort: [IndexSort]
    package var after: QueryPosition?
    package var limit: Int

    package init(
        zones: [ZoneKey], kind: String, conditions: [IndexCondition] = [], sort: [IndexSort] = [],
        after: QueryPosition? = nil, limit: Int
    ) {
        self.zones = zones
        self.kind = kind
        self.conditions = conditions
        self.sort = sort
        self.after = after
        self.limit = limit
    }
}

extension IndexQuery {
    /// The condition whose index rows a backend's search starts from, with its position: the most
    /// selective kind of match that is not negated; nil when none can (the search then starts from every
    /// entry of the kind).
    package var drivingCondition: (offset: Int, element: IndexCondition)? {
        conditions.enumerated().compactMap { condition in
            condition.element.negated ? nil : condition.element.match.searchRank.map { (condition, $0) }
        }
        .min { $0.1 < $1.1 }?.0
    }
}

extension IndexCondition.Match {
    /// How narrowly a match finds its rows through the index: equality first, distances last; nil for
    /// matches that cannot drive a search.
    var searchRank: Int? {
        switch self {
        case .allOf: nil
        case .equal: 0
        case .oneOf: 1
        case .prefix: 2
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual: 3
        case .within: 4
        }
    }
}

/// An entry a query found, with the zone it lives in and its place in the query's order.
package struct QueryMatch: Sendable, Hashable {
    package var zone: ZoneAddress
    package var entry: Entry
    package var position: QueryPosition

    package init(zone: ZoneAddress, entry: Entry, position: QueryPosition) {
        self.zone = zone
        self.entry = entry
        self.position = position
    }
}

/// Great-circle distance on a sphere of Earth's mean radius; what `within` and distance sorting use.
package func greatCircleMeters(_ latitude1: Double, _ longitude1: Double, _ latitude2: Double, _ longitude2: Double) -> Double {
    let radians = Double.pi / 180
    let dLatitude = (latitude2 - latitude1) * radians
    let dLongitude = (longitude2 - longitude1) * radians
    let a =
        sin(dLatitude / 2) * sin(dLatitude / 2)
        + cos(latitude1 * radians) * cos(latitude2 * radians) * sin(dLongitude / 2) * sin(dLongitude / 2)
    return 2 * 6_371_008.8 * asin(min(1, sqrt(a)))
}

extension IndexCondition {
    /// Whether an entry with these index rows meets the condition, with the same comparisons a backend's
    /// query makes: numbers by value whatever their kind, text by its UTF-8 bytes, numbers before text.
    /// What record subscriptions evaluate changed records with.
    package func matches(_ rows: [IndexEntry]) -> Bool {
        let values = rows.filter { fields.contains($0.field) }.map(\.value)
        let holds: Bool
        switch match {
        case .equal(let value): holds = values.contains { Self.compare($0, value) == 0 }
        case .lessThan(let value): holds = values.contains { Self.compare($0, value).map { $0 < 0 } ?? false }
        case .lessThanOrEqual(let value): holds = values.contains { Self.compare($0, value).map { $0 <= 0 } ?? false }
        case .greaterThan(let value): holds = values.contains { Self.compare($0, value).map { $0 > 0 } ?? false }
        case .greaterThanOrEqual(let value): holds = values.contains { Self.compare($0, value).map { $0 >= 0 } ?? false }
        case .oneOf(let candidates): holds = values.contains { value in candidates.contains { Self.compare(value, $0) == 0 } }
        case .allOf(let candidates):
            holds = candidates.allSatisfy { candidate in values.contains { Self.compare($0, candidate) == 0 } }
        case .prefix(let prefix):
            holds = values.contains { if case .text(let text) = $0 { text.utf8.starts(with: prefix.utf8) } else { false } }
        case .within(let meters, let latitude, let longitude):
            holds = values.contains {
                guard case .point(let pointLatitude, let pointLongitude) = $0 else { return false }
                return greatCircleMeters(pointLatitude, pointLongitude, latitude, longitude) <= meters
            }
        }
        return holds != negated
    }

    /// -1, 0 or 1 as SQLite orders the two values; nil for points, which only distances compare.
    private static func compare(_ left: IndexValue, _ right: IndexValue) -> Int? {
        func number(_ value: IndexValue) -> Double? {
            switch value {
            case .integer(let integer): Double(integer)
            case .real(let real): real
            default: nil
            }
        }
        switch (left, right) {
        case (.text(let a), .text(let b)):
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : (a.utf8.elementsEqual(b.utf8) ? 0 : 1)
        case (.integer(let a), .integer(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.text, .integer), (.text, .real): return 1
        case (.integer, .text), (.real, .text): return -1
        default:
            guard let a = number(left), let b = number(right) else { return nil }
            return a < b ? -1 : (a == b ? 0 : 1)
        }
    }
}
