import Foundation
import NimbusCore
import Testing

/// Metadata queries' predicates: NSPredicate's format as apps write it for `NSMetadataQuery`.
@Suite struct MetadataPredicateTests {
    let item: [String: MetadataValue] = [
        "kMDItemFSName": .string("Grocery List.icfnote"),
        "kMDItemFSSize": .number(2048),
        "kMDItemFSContentChangeDate": .date(Date(timeIntervalSince1970: 1_000_000)),
        "NSMetadataUbiquitousItemHasUnresolvedConflictsKey": .number(1),
    ]

    func matches(_ format: String, _ arguments: [FieldValue] = []) throws -> Bool {
        try MetadataPredicate(format, arguments).matches { item[$0] }
    }

    @Test func namesMatchLikePatternsWithWildcardsAndOptions() throws {
        #expect(try matches("%K LIKE '*.icfnote'", [.string("kMDItemFSName")]))
        #expect(try matches("kMDItemFSName LIKE 'Grocery?List*'"))
        #expect(try !matches("kMDItemFSName LIKE '*.txt'"))
        #expect(try !matches("kMDItemFSName LIKE 'grocery*'"), "case counts by default")
        #expect(try matches("kMDItemFSName LIKE[c] 'grocery*'"))
        #expect(try matches("kMDItemFSName BEGINSWITH[cd] 'GRÖCERY'"))
        #expect(try matches("kMDItemFSName ENDSWITH '.icfnote' AND kMDItemFSName CONTAINS 'List'"))
        #expect(try matches("kMDItemFSName IN {'a', 'Grocery List.icfnote'}"))
        #expect(try matches("kMDItemFSName LIKE '*'"))
        #expect(try !matches("kMDItemFSName LIKE ''"))
    }

    @Test func sizesDatesAndFlagsCompare() throws {
        #expect(try matches("kMDItemFSSize > 1000 AND kMDItemFSSize <= 2048"))
        #expect(try !matches("kMDItemFSSize < 1000"))
        #expect(try matches("kMDItemFSContentChangeDate > %@", [.timestamp(Date(timeIntervalSince1970: 999_999))]))
        #expect(try !matches("kMDItemFSContentChangeDate > %@", [.timestamp(Date(timeIntervalSince1970: 1_000_001))]))
        #expect(try matches("NSMetadataUbiquitousItemHasUnresolvedConflictsKey == YES"))
        #expect(try !matches("NSMetadataUbiquitousItemHasUnresolvedConflictsKey == FALSE"))
    }

    @Test func logicCombinesAndMissingKeysMatchOnlyInequality() throws {
        #expect(try matches("kMDItemFSSize < 10 OR kMDItemFSName LIKE '*.icfnote'"))
        #expect(try matches("NOT (kMDItemFSSize < 10) && TRUEPREDICATE"))
        #expect(try !matches("FALSEPREDICATE || kMDItemFSSize < 10"))
        #expect(try !matches("kMDItemMissing == 'x'"))
        #expect(try matches("kMDItemMissing != 'x'"))
        #expect(try !matches("kMDItemFSName > 5"), "text and numbers do not compare")
    }

    @Test func badPredicatesSayWhereAndWhy() {
        for (format, message) in [
            ("kMDItemFSName LIKE", "expected a value"),
            ("kMDItemFSName WITHIN 'x'", "expected a comparison after kMDItemFSName"),
            ("kMDItemFSName LIKE[x] 'a'", "expected c, d or cd"),
            ("(kMDItemFSSize > 1", "expected )"),
            ("kMDItemFSSize > 1 kMDItemFSSize", "expected AND, OR or the end"),
            ("%K == 1", "more % arguments"),
        ] {
            #expect(throws: Predicate.ParseError.self, "\(format)") { try MetadataPredicate(format) }
            do {
                _ = try MetadataPredicate(format)
            } catch {
                #expect(error.message.contains(message), "\(format): \(error)")
            }
        }
    }

    @Test func aPredicateTravelsAsJSON() throws {
        let predicate = try MetadataPredicate("kMDItemFSName LIKE[c] '*.TXT' OR NOT kMDItemFSSize IN {1, 2}")
        let decoded = try JSONDecoder().decode(MetadataPredicate.self, from: JSONEncoder().encode(predicate))
        #expect(decoded == predicate)
    }
}
