import NimbusCore
import NimbusTestingCore
import Testing

/// Schema texts and predicates with pieces deleted, repeated or inserted at random: the parsers return a
/// value or a parse error that points inside the text, never crash; a schema they read prints back to
/// itself. Seeded, so a failing round repeats.
@Suite(.cleansUp) struct ParserFuzzTests {
    struct TextMutator {
        static let fragments = [
            "(", ")", ",", ";", "\"", "'", "<", ">", "LIST<", "GRANT", "TO", "RECORD TYPE", "QUERYABLE", "ENCRYPTED", "%@", "%K",
            "AND", "OR", "NOT", "==", "BEGINSWITH", "IN", "ANY", "BETWEEN", "{", "}", " ", "\n", "😀", "\u{0}", "-", ".", "//",
            "99999999999999999999999", "1e999",
        ]

        var random: SeededGenerator

        /// `text` with up to three edits: a piece deleted, a piece repeated, a fragment inserted.
        mutating func mutate(_ text: String) -> String {
            var characters = Array(text)
            for _ in 0...Int.random(in: 0...2, using: &random) {
                let start = Int.random(in: 0...characters.count, using: &random)
                let end = min(characters.count, start + Int.random(in: 0...12, using: &random))
                switch Int.random(in: 0..<3, using: &random) {
                case 0: characters.removeSubrange(start..<end)
                case 1: characters.insert(contentsOf: characters[start..<end], at: start)
                default: characters.insert(contentsOf: Self.fragments.randomElement(using: &random)!, at: start)
                }
            }
            return String(characters)
        }
    }

    @Test func editedSchemasAreReadOrRefusedAtAPlaceInTheText() async {
        var mutator = TextMutator(random: SeededGenerator(seed: 2026_11_22))
        for round in 0..<3000 {
            // Long CPU work yields between rounds: the cooperative threads are every other test's too.
            await Task.yield()
            let text = mutator.mutate(SchemaTests.shoppingList)
            do {
                let schema = try Schema(parsing: text)
                #expect((try? Schema(parsing: schema.text)) == schema, "round \(round): \(text)")
            } catch {
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                let line = lines.indices.contains(error.line - 1) ? lines[error.line - 1] : nil
                #expect(line != nil, "round \(round): \(error) in \(text)")
                if let line { #expect((1...line.count + 1).contains(error.column), "round \(round): \(error) in \(text)") }
            }
        }
    }

    @Test func editedPredicatesAreReadOrRefusedAtAPlaceInTheText() async {
        let here = FieldValue.location(Location(latitude: 52.37, longitude: 4.89))
        let predicates: [(format: String, arguments: [FieldValue])] = [
            ("list == %@ AND name BEGINSWITH 'a'", [.reference(RecordReference(recordName: "groceries"))]),
            ("number > 3 && number <= 10.5 OR done == true", []),
            ("self CONTAINS 'milk' AND NOT (tags CONTAINS \"x\")", []),
            ("distanceToLocation:fromLocation:(location, %@) < 5000", [here]),
            ("ANY tags IN {'a', 'b'} AND number BETWEEN {1, 5}", []),
            ("%K == %@ AND TRUEPREDICATE", [.string("name"), .string("milk")]),
        ]
        var mutator = TextMutator(random: SeededGenerator(seed: 2026_11_23))
        for round in 0..<3000 {
            // Long CPU work yields between rounds: the cooperative threads are every other test's too.
            await Task.yield()
            let predicate = predicates[round % predicates.count]
            let format = mutator.mutate(predicate.format)
            do {
                _ = try Predicate.filters(format, predicate.arguments)
            } catch {
                #expect((0...format.count).contains(error.position), "round \(round): \(error) in \(format)")
            }
        }
    }
}
