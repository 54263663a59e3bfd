import Foundation
import NimbusCore
@testable import NimbusStore
import NimbusTestingCore
import Testing

/// Keyset paging, run per backend: reading a query page by page from each page's last position gives
/// exactly the matches of reading it at once, in the query's order (sort keys, then zone name, then key),
/// whatever the page size, the sort keys (mixed numbers and text, ties, missing fields, distances) and the
/// zones; and saves and deletes between pages neither repeat nor skip what follows.
@Suite(.cleansUp) struct QueryPagingConformanceTests {
    static let service = ZoneAddress.Service.records(
        container: "iCloud.com.example.Cloudy", environment: "development", database: "private")
    /// Byte order, which both backends sort names by: "A" < "Z" < "b".
    static let zoneNames = ["b", "A", "Z"]
    static let origin = (latitude: 0.0, longitude: 0.0)

    /// What an entry holds, as the test computes the order it expects.
    struct Item {
        var zone: String
        var key: String
        var number: IndexValue?
        var group: String
        var point: (latitude: Double, longitude: Double)?
    }

    static func item(zone: String, _ i: Int) -> Item {
        let number: IndexValue? =
            switch i % 5 {
            case 0: nil
            case 1: .integer(Int64(i % 7))
            case 2: .real(Double(i % 7) + 0.5)
            case 3: .text("t\(i % 3)")
            default: .integer(3)
            }
        let point = i % 3 == 0 ? nil : (latitude: Double(i % 4), longitude: Double(i % 4) / 2)
        return Item(zone: zone, key: String(format: "k%02d", i), number: number, group: i % 2 == 0 ? "even" : "odd", point: point)
    }

    func save(_ store: any Store, _ account: String, _ item: Item) async throws {
        _ = try await store.transact(zone(account, item.zone), creating: true) { transaction in
            try transaction.put(item.key, payload: Data(item.key.utf8), size: item.key.utf8.count)
            var rows = [IndexEntry(field: "group", value: .text(item.group))]
            if let number = item.number { rows.append(IndexEntry(field: "number", value: number)) }
            if let point = item.point {
                rows.append(IndexEntry(field: "location", value: .point(latitude: point.latitude, longitude: point.longitude)))
            }
            try transaction.index(item.key, kind: "Items", rows: rows)
            // Another kind in the same zone, which no query of Items returns.
            try transaction.put("note-" + item.key, payload: Data("n".utf8), size: 1)
            try transaction.index("note-" + item.key, kind: "Notes", rows: [IndexEntry(field: "group", value: .text(item.group))])
        }
    }

    func zone(_ account: String, _ name: String) -> ZoneKey {
        ZoneKey(accountID: account, address: ZoneAddress(service: Self.service, name: name))
    }

    func seed(_ store: any Store) async throws -> (account: String, items: [Item]) {
        let account = Secrets.userRecordName()
        try await store.createAccount(
            AccountRecord(
                id: account, email: "\(account)@example.com", passwordHash: "x", isAdministrator: false, createdAt: Date()))
        var items = [Item]()
        for name in Self.zoneNames {
            for i in 0..<30 {
                items.append(Self.item(zone: name, i))
                try await save(store, account, items.last!)
            }
        }
        return (account, items)
    }

    /// Every page of `query` read from the last one's position, `size` at a time.
    func paged(_ store: any Store, _ query: IndexQuery, size: Int) async throws -> [String] {
        var query = query
        query.limit = size
        var keys = [String]()
        while true {
            let page = try await store.query(query)
            #expect(page.count <= size)
            keys += page.map { "\($0.zone.name)/\($0.entry.key)" }
            // A page that does not move on would loop for ever: more keys than entries means it did.
            guard page.count == size, let last = page.last, keys.count <= 1000 else { return keys }
            query.after = last.position
        }
    }

    /// Numbers before text, numbers by value, text by bytes: how both backends order mixed values.
    static func precedes(_ a: IndexValue, _ b: IndexValue) -> Bool {
        func number(_ value: IndexValue) -> Double? {
            switch value {
            case .integer(let integer): Double(integer)
            case .real(let real): real
            default: nil
            }
        }
        switch (number(a), number(b), a, b) {
        case (let x?, let y?, _, _): return x < y
        case (.some, nil, _, _): return true
        case (nil, .some, _, _): return false
        case (_, _, .text(let x), .text(let y)): return x.utf8.lexicographicallyPrecedes(y.utf8)
        default: return false
        }
    }

    /// The order a query sorted by `key` (missing last either way), then by zone name and key, must give.
    static func expected(_ items: [Item], by key: ((Item) -> IndexValue?)?, ascending: Bool = true) -> [String] {
        items.sorted { a, b in
            if let key {
                switch (key(a), key(b)) {
                case (nil, .some): return false
                case (.some, nil): return true
                case (let x?, let y?) where precedes(x, y) || precedes(y, x): return ascending == precedes(x, y)
                default: break
                }
            }
            if a.zone != b.zone { return a.zone.utf8.lexicographicallyPrecedes(b.zone.utf8) }
            return a.key.utf8.lexicographicallyPrecedes(b.key.utf8)
        }
        .map { "\($0.zone)/\($0.key)" }
    }

    static func distance(_ item: Item) -> IndexValue? {
        item.point.map { .real(greatCircleMeters($0.latitude, $0.longitude, origin.latitude, origin.longitude)) }
    }

    @Test(arguments: StoreBackend.allCases)
    func pagesReadEveryMatchOnceInTheQueryOrder(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let (account, items) = try await seed(store)
        let zones = Self.zoneNames.map { zone(account, $0) }
        let even = IndexCondition(field: "group", .equal(.text("even")))
        let odd = IndexCondition(field: "group", .equal(.text("even")), negated: true)
        let evens = items.filter { $0.group == "even" }
        let odds = items.filter { $0.group == "odd" }
        let cases: [(String, IndexQuery, [String])] = [
            ("unsorted", IndexQuery(zones: zones, kind: "Items", limit: 1000), Self.expected(items, by: nil)),
            (
                "unsorted, one equality", IndexQuery(zones: zones, kind: "Items", conditions: [even], limit: 1000),
                Self.expected(evens, by: nil)
            ),
            (
                "unsorted, negated only", IndexQuery(zones: zones, kind: "Items", conditions: [odd], limit: 1000),
                Self.expected(odds, by: nil)
            ),
            (
                "by number", IndexQuery(zones: zones, kind: "Items", sort: [IndexSort(field: "number")], limit: 1000),
                Self.expected(items, by: \.number)
            ),
            (
                "by number, descending",
                IndexQuery(zones: zones, kind: "Items", sort: [IndexSort(field: "number", ascending: false)], limit: 1000),
                Self.expected(items, by: \.number, ascending: false)
            ),
            (
                "evens by number, descending",
                IndexQuery(
                    zones: zones, kind: "Items", conditions: [even], sort: [IndexSort(field: "number", ascending: false)],
                    limit: 1000),
                Self.expected(evens, by: \.number, ascending: false)
            ),
            (
                "by distance",
                IndexQuery(
                    zones: zones, kind: "Items",
                    sort: [
                        IndexSort(
                            field: "location", order: .distance(latitude: Self.origin.latitude, longitude: Self.origin.longitude))
                    ],
                    limit: 1000),
                Self.expected(items, by: Self.distance)
            ),
            (
                "by distance, descending",
                IndexQuery(
                    zones: zones, kind: "Items",
                    sort: [
                        IndexSort(
                            field: "location", ascending: false,
                            order: .distance(latitude: Self.origin.latitude, longitude: Self.origin.longitude))
                    ], limit: 1000),
                Self.expected(items, by: Self.distance, ascending: false)
            ),
        ]
        // One zone sorted by one field with no driving condition reads the field's index in order (SQLite).
        let inA = items.filter { $0.zone == "A" }
        let oneZone = [zone(account, "A")]
        let oneZoneCases: [(String, IndexQuery, [String])] = [
            (
                "one zone by number", IndexQuery(zones: oneZone, kind: "Items", sort: [IndexSort(field: "number")], limit: 1000),
                Self.expected(inA, by: \.number)
            ),
            (
                "one zone by number, descending",
                IndexQuery(zones: oneZone, kind: "Items", sort: [IndexSort(field: "number", ascending: false)], limit: 1000),
                Self.expected(inA, by: \.number, ascending: false)
            ),
            (
                "one zone's odds by number",
                IndexQuery(zones: oneZone, kind: "Items", conditions: [odd], sort: [IndexSort(field: "number")], limit: 1000),
                Self.expected(inA.filter { $0.group == "odd" }, by: \.number)
            ),
        ]
        for (name, query, expected) in cases + oneZoneCases {
            let whole = try await store.query(query).map { "\($0.zone.name)/\($0.entry.key)" }
            #expect(whole == expected, "\(name)")
            for size in [1, 4, 7] {
                #expect(try await paged(store, query, size: size) == expected, "\(name), \(size) a page")
            }
        }
        // Sorted by two keys, the second breaking the first's ties.
        let twoKeys = IndexQuery(
            zones: zones, kind: "Items", sort: [IndexSort(field: "group", ascending: false), IndexSort(field: "number")],
            limit: 1000)
        let expected = Self.expected(odds, by: \.number) + Self.expected(evens, by: \.number)
        #expect(try await store.query(twoKeys).map { "\($0.zone.name)/\($0.entry.key)" } == expected)
        #expect(try await paged(store, twoKeys, size: 4) == expected)
    }

    @Test(arguments: StoreBackend.allCases)
    func savesAndDeletesBetweenPagesNeitherRepeatNorSkip(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let (account, _) = try await seed(store)
        let zones = Self.zoneNames.map { zone(account, $0) }
        for query in [
            IndexQuery(zones: zones, kind: "Items", limit: 10),
            IndexQuery(zones: zones, kind: "Items", sort: [IndexSort(field: "number")], limit: 10),
            IndexQuery(
                zones: [zone(account, "A")], kind: "Items", sort: [IndexSort(field: "number", ascending: false)], limit: 10),
        ] {
            let first = try await store.query(query)
            let seen = Set(first.map { "\($0.zone.name)/\($0.entry.key)" })
            // One already read and one not yet read go; a new one arrives.
            let gone = [
                first[2], try await store.query(IndexQuery(zones: query.zones, kind: "Items", sort: query.sort, limit: 20))[15],
            ]
            for match in gone {
                _ = try await store.transact(zone(account, match.zone.name), creating: false) { transaction in
                    try transaction.put(match.entry.key, payload: nil, size: 0)
                }
            }
            let arrival = "new-\(query.zones.count)-\(query.sort.count)"
            try await save(store, account, Item(zone: "A", key: arrival, number: .integer(4), group: "odd", point: nil))
            var rest = query
            rest.after = first.last?.position
            rest.limit = 1000
            var everything = query
            everything.limit = 1000
            let now = try await store.query(everything).map { "\($0.zone.name)/\($0.entry.key)" }
            let lastSeen = "\(first.last!.zone.name)/\(first.last!.entry.key)"
            let expected = Array(now[(now.firstIndex(of: lastSeen)! + 1)...])
            #expect(try await store.query(rest).map { "\($0.zone.name)/\($0.entry.key)" } == expected)
            #expect(expected.allSatisfy { !seen.contains($0) })
            #expect(expected.contains("A/" + arrival))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func aPositionOfAnotherShapeIsRefused(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let (account, _) = try await seed(store)
        let zones = Self.zoneNames.map { zone(account, $0) }
        let sorted = IndexQuery(zones: zones, kind: "Items", sort: [IndexSort(field: "number")], limit: 5)
        let unsorted = IndexQuery(zones: zones, kind: "Items", limit: 5)
        let sortedPosition = try #require(try await store.query(sorted).last?.position)
        let unsortedPosition = try #require(try await store.query(unsorted).last?.position)
        var query = unsorted
        query.after = sortedPosition
        await #expect(throws: StoreError.foreignPosition) { _ = try await store.query(query) }
        query = sorted
        query.after = unsortedPosition
        await #expect(throws: StoreError.foreignPosition) { _ = try await store.query(query) }
        query.after = QueryPosition([])
        await #expect(throws: StoreError.foreignPosition) { _ = try await store.query(query) }
    }
}
