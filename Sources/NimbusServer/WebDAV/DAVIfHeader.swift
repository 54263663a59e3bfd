/// WebDAV's `If` header (RFC 4918 §10.4): lists of conditions on lock tokens and entity tags, each list
/// for the request's resource or for one it names. The request goes ahead only if some list holds, and the
/// tokens it names are the locks the client submits.
struct DAVIfHeader: Sendable, Equatable {
    struct Condition: Sendable, Equatable {
        var negated: Bool
        var token: String?
        var etag: String?
    }

    struct List: Sendable, Equatable {
        /// The resource the list is about (a URL or path); nil: the request's own.
        var resource: String?
        var conditions: [Condition]
    }

    var lists: [List]

    /// Every lock token the header names outside a `Not`: the locks the client holds and submits.
    var submittedTokens: Set<String> {
        Set(lists.flatMap { $0.conditions.filter { !$0.negated }.compactMap(\.token) })
    }

    /// Parses the header; nil when it does not follow the grammar (the request is then refused).
    init?(_ text: String) {
        var scanner = Scanner(text)
        var lists: [List] = []
        var resource: String?
        while true {
            scanner.skipSpaces()
            guard let next = scanner.peek else { break }
            if next == "<" {
                guard let tag = scanner.bracketed("<", ">") else { return nil }
                resource = tag
                continue
            }
            guard next == "(" else { return nil }
            scanner.advance()
            var conditions: [Condition] = []
            while true {
                scanner.skipSpaces()
                guard let character = scanner.peek else { return nil }
                if character == ")" {
                    scanner.advance()
                    break
                }
                var negated = false
                if scanner.consume("Not") {
                    negated = true
                    scanner.skipSpaces()
                }
                if scanner.peek == "<", let token = scanner.bracketed("<", ">") {
                    conditions.append(Condition(negated: negated, token: token))
                } else if scanner.peek == "[", let etag = scanner.bracketed("[", "]") {
                    conditions.append(Condition(negated: negated, etag: etag))
                } else {
                    return nil
                }
            }
            guard !conditions.isEmpty else { return nil }
            lists.append(List(resource: resource, conditions: conditions))
        }
        guard !lists.isEmpty else { return nil }
        self.lists = lists
    }

    private struct Scanner {
        let characters: [Character]
        var index = 0
        init(_ text: String) { characters = Array(text) }

        var peek: Character? { index < characters.count ? characters[index] : nil }
        mutating func advance() { index += 1 }
        mutating func skipSpaces() { while let next = peek, next == " " || next == "\t" { advance() } }

        mutating func consume(_ word: String) -> Bool {
            let word = Array(word)
            guard index + word.count <= characters.count, Array(characters[index..<index + word.count]) == word else {
                return false
            }
            index += word.count
            return true
        }

        /// The text between `open` and `close`, which the scanner is at.
        mutating func bracketed(_ open: Character, _ close: Character) -> String? {
            guard peek == open else { return nil }
            advance()
            let start = index
            while let next = peek, next != close { advance() }
            guard peek == close else { return nil }
            let text = String(characters[start..<index])
            advance()
            return text
        }
    }
}
