import Foundation
import NimbusCore
import NimbusTestingCore
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

    /// LIKE walks UTF-8 bytes: `?` must take a whole scalar of two, three or four bytes, and a literal must not
    /// match part of one. Checked against a model over scalars, for names and patterns made of a few scalars.
    @Test func likeMatchesWholeScalarsAsAModelOverScalarsDoes() throws {
        let scalars: [Unicode.Scalar] = ["a", "b", ".", "é", "\u{0301}", "日", "本", "👍", "\u{1F44E}"]
        let patternScalars = scalars + ["*", "?"]
        var generator = SeededGenerator(seed: 7)
        func text(of alphabet: [Unicode.Scalar], upTo length: Int) -> String {
            let count = Int.random(in: 0...length, using: &generator)
            return String(String.UnicodeScalarView((0..<count).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        var matching = 0
        for _ in 0..<4000 {
            let (name, pattern) = (text(of: scalars, upTo: 6), text(of: patternScalars, upTo: 5))
            let predicate = MetadataPredicate.compare(key: "name", operator: .like, value: .string(pattern), options: [])
            let expected = Self.like(Array(name.unicodeScalars), Array(pattern.unicodeScalars))
            #expect(predicate.matches { _ in .string(name) } == expected, "\(name) LIKE \(pattern)")
            if expected { matching += 1 }
        }
        #expect(matching > 200, "enough of the pairs match for the check to mean something")
        #expect(try !MetadataPredicate("kMDItemFSName LIKE '?'").matches { _ in .string("e\u{0301}") }, "two scalars")
        #expect(try MetadataPredicate("kMDItemFSName LIKE '??'").matches { _ in .string("e\u{0301}") })
        #expect(try MetadataPredicate("kMDItemFSName LIKE '?.txt'").matches { _ in .string("👍.txt") })
    }

    /// LIKE over arrays of scalars, as written for clarity.
    private static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        guard let first = pattern.first else { return text.isEmpty }
        let rest = Array(pattern.dropFirst())
        switch first {
        case "*": return (0...text.count).contains { like(Array(text.dropFirst($0)), rest) }
        case "?": return !text.isEmpty && like(Array(text.dropFirst()), rest)
        default: return text.first == first && like(Array(text.dropFirst()), rest)
        }
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
