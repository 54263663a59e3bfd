/// A container environment's schema in CloudKit's text format (`.ckdb`), as `cktool` reads and writes it:
///
/// ```
/// DEFINE SCHEMA
///     CREATE ROLE Editors;
///     RECORD TYPE Items (
///         "___recordID" REFERENCE QUERYABLE,
///         name          STRING QUERYABLE SORTABLE SEARCHABLE,
///         tags          LIST<STRING>,
///         GRANT WRITE TO "_creator",
///         GRANT READ TO "_world"
///     );
/// ```
package struct Schema: Hashable, Sendable {
    package var roles: [String]
    package var recordTypes: [RecordType]

    package init(roles: [String] = [], recordTypes: [RecordType] = []) {
        self.roles = roles
        self.recordTypes = recordTypes
    }

    package struct RecordType: Hashable, Sendable {
        package var name: String
        package var fields: [Field]
        package var grants: [Grant]

        package init(name: String, fields: [Field] = [], grants: [Grant] = []) {
            self.name = name
            self.fields = fields
            self.grants = grants
        }
    }

    package struct Field: Hashable, Sendable {
        package var name: String
        /// The element type name (`STRING`, `INT64`, `DOUBLE`, `TIMESTAMP`, `REFERENCE`, `ASSET`,
        /// `LOCATION`, `BYTES`).
        package var type: String
        package var isList: Bool
        package var isEncrypted: Bool
        package var queryable: Bool
        package var sortable: Bool
        package var searchable: Bool

        package init(
            name: String, type: String, isList: Bool = false, isEncrypted: Bool = false, queryable: Bool = false,
            sortable: Bool = false, searchable: Bool = false
        ) {
            self.name = name
            self.type = type
            self.isList = isList
            self.isEncrypted = isEncrypted
            self.queryable = queryable
            self.sortable = sortable
            self.searchable = searchable
        }

        /// The wire type of the field's values, e.g. `STRING_LIST`.
        package var wireType: String { isList ? type + "_LIST" : type }
    }

    package struct Grant: Hashable, Sendable {
        package enum Permission: String, Sendable, CaseIterable { case read = "READ", create = "CREATE", write = "WRITE" }
        package var permissions: [Permission]
        package var role: String

        package init(_ permissions: [Permission], to role: String) {
            self.permissions = permissions
            self.role = role
        }
    }

    /// The system fields a schema may name, to give them indexes, with their types as `cktool` exports them.
    package static let systemFieldTypes = [
        "___recordID": "REFERENCE", "___createTime": "TIMESTAMP", "___modTime": "TIMESTAMP", "___createdBy": "REFERENCE",
        "___modifiedBy": "REFERENCE", "___etag": "STRING",
    ]

    /// Declares QUERYABLE and SORTABLE indexes on system fields (e.g. `___createTime`) of a record type.
    package mutating func indexSystemFields(_ fields: [String], of typeName: String) throws(NimbusError) {
        guard let index = recordTypes.firstIndex(where: { $0.name == typeName }) else {
            throw .notFound("record type \(typeName) is not in the schema")
        }
        for field in fields {
            guard let type = Self.systemFieldTypes[field] else { throw .badRequest("\(field) is not a system field") }
            recordTypes[index].fields.removeAll { $0.name == field }
            recordTypes[index].fields.append(Field(name: field, type: type, queryable: true, sortable: true))
        }
    }

    package static let fieldTypes: Set<String> = [
        "STRING", "INT64", "DOUBLE", "TIMESTAMP", "REFERENCE", "ASSET", "LOCATION", "BYTES",
    ]

    /// Where and why schema text could not be read; lines and columns count from 1.
    package struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        package var message: String
        package var line: Int
        package var column: Int
        package var description: String { "schema line \(line), column \(column): \(message)" }
    }
}

extension Schema {
    /// The schema in CloudKit's text format; `Schema(parsing:)` reads it back unchanged.
    package var text: String {
        var lines = ["DEFINE SCHEMA", ""]
        for role in roles { lines.append("    CREATE ROLE \(Self.quoted(role));") }
        if !roles.isEmpty { lines.append("") }
        for type in recordTypes {
            lines.append("    RECORD TYPE \(Self.quoted(type.name)) (")
            var members = type.fields.map { field in
                var words = [Self.quoted(field.name)]
                let base = field.isList ? "LIST<\(field.type)>" : field.type
                words.append(field.isEncrypted ? "ENCRYPTED \(base)" : base)
                if field.queryable { words.append("QUERYABLE") }
                if field.sortable { words.append("SORTABLE") }
                if field.searchable { words.append("SEARCHABLE") }
                return words.joined(separator: " ")
            }
            members += type.grants.map {
                "GRANT \($0.permissions.map(\.rawValue).joined(separator: ", ")) TO \(Self.quoted($0.role))"
            }
            for (index, member) in members.enumerated() {
                lines.append("        " + member + (index == members.count - 1 ? "" : ","))
            }
            lines.append("    );")
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    /// Names that are not plain identifiers (system fields, roles like `_world`) are quoted.
    package static func quoted(_ name: String) -> String {
        let plain = name.first.map { $0.isLetter } == true && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
        return plain && !SchemaLexer.keywords.contains(name.uppercased()) ? name : "\"\(name)\""
    }

    /// Reads CloudKit's text schema format.
    package init(parsing text: String) throws(ParseError) {
        var parser = SchemaParser(tokens: try SchemaLexer(text).tokens())
        self = try parser.schema()
    }
}

struct SchemaLexer {
    static let keywords: Set<String> = [
        "DEFINE", "SCHEMA", "CREATE", "ROLE", "RECORD", "TYPE", "GRANT", "TO", "LIST", "ENCRYPTED", "QUERYABLE", "SORTABLE",
        "SEARCHABLE",
    ]

    struct Token: Equatable {
        enum Kind: Equatable { case word, quoted, symbol }
        var kind: Kind
        var text: String
        var line: Int
        var column: Int
    }

    let characters: [Character]
    init(_ text: String) { characters = Array(text) }

    func tokens() throws(Schema.ParseError) -> [Token] {
        var tokens = [Token]()
        var index = 0
        var line = 1
        var column = 1
        func advance() {
            if characters[index] == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
            index += 1
        }
        while index < characters.count {
            let character = characters[index]
            let (startLine, startColumn) = (line, column)
            if character.isWhitespace {
                advance()
            } else if character == "/" && index + 1 < characters.count && characters[index + 1] == "/" {
                while index < characters.count && characters[index] != "\n" { advance() }
            } else if character == "\"" {
                advance()
                var text = ""
                while index < characters.count && characters[index] != "\"" && characters[index] != "\n" {
                    text.append(characters[index])
                    advance()
                }
                guard index < characters.count, characters[index] == "\"" else {
                    throw Schema.ParseError(message: "unterminated quoted name", line: startLine, column: startColumn)
                }
                advance()
                tokens.append(Token(kind: .quoted, text: text, line: startLine, column: startColumn))
            } else if character.isLetter || character == "_" {
                var text = ""
                while index < characters.count
                    && (characters[index].isLetter || characters[index].isNumber || characters[index] == "_")
                {
                    text.append(characters[index])
                    advance()
                }
                tokens.append(Token(kind: .word, text: text, line: startLine, column: startColumn))
            } else if "(),;<>".contains(character) {
                advance()
                tokens.append(Token(kind: .symbol, text: String(character), line: startLine, column: startColumn))
            } else {
                throw Schema.ParseError(message: "unexpected character \"\(character)\"", line: startLine, column: startColumn)
            }
        }
        return tokens
    }
}

struct SchemaParser {
    let tokens: [SchemaLexer.Token]
    var index = 0

    init(tokens: [SchemaLexer.Token]) { self.tokens = tokens }

    func error(_ message: String) -> Schema.ParseError {
        let token = index < tokens.count ? tokens[index] : tokens.last
        return Schema.ParseError(
            message: message, line: token?.line ?? 1, column: (token?.column ?? 0) + (index < tokens.count ? 0 : 1))
    }

    func peek(_ keyword: String) -> Bool {
        index < tokens.count && tokens[index].kind == .word && tokens[index].text.uppercased() == keyword
    }

    mutating func expect(_ keyword: String) throws(Schema.ParseError) {
        guard peek(keyword) else { throw error("expected \(keyword)") }
        index += 1
    }

    mutating func symbol(_ text: String) -> Bool {
        guard index < tokens.count, tokens[index].kind == .symbol, tokens[index].text == text else { return false }
        index += 1
        return true
    }

    mutating func expectSymbol(_ text: String) throws(Schema.ParseError) {
        guard symbol(text) else { throw error("expected \(text)") }
    }

    mutating func name(_ what: String) throws(Schema.ParseError) -> String {
        guard index < tokens.count, tokens[index].kind != .symbol else { throw error("expected \(what)") }
        defer { index += 1 }
        return tokens[index].text
    }

    mutating func schema() throws(Schema.ParseError) -> Schema {
        try expect("DEFINE")
        try expect("SCHEMA")
        var schema = Schema()
        while index < tokens.count {
            if peek("CREATE") {
                index += 1
                try expect("ROLE")
                schema.roles.append(try name("a role name"))
                try expectSymbol(";")
            } else if peek("RECORD") {
                let type = try recordType()
                guard !schema.recordTypes.contains(where: { $0.name == type.name }) else {
                    throw error("record type \(type.name) is defined twice")
                }
                schema.recordTypes.append(type)
            } else {
                throw error("expected CREATE ROLE or RECORD TYPE")
            }
        }
        return schema
    }

    mutating func recordType() throws(Schema.ParseError) -> Schema.RecordType {
        try expect("RECORD")
        try expect("TYPE")
        var type = Schema.RecordType(name: try name("a record type name"))
        try expectSymbol("(")
        if !symbol(")") {
            repeat {
                if peek("GRANT") {
                    type.grants.append(try grant())
                } else {
                    let field = try field()
                    guard !type.fields.contains(where: { $0.name == field.name }) else {
                        throw error("field \(field.name) is defined twice in \(type.name)")
                    }
                    type.fields.append(field)
                }
            } while symbol(",")
            try expectSymbol(")")
        }
        try expectSymbol(";")
        return type
    }

    mutating func field() throws(Schema.ParseError) -> Schema.Field {
        let name = try name("a field name")
        var field = Schema.Field(name: name, type: "")
        if peek("ENCRYPTED") {
            index += 1
            field.isEncrypted = true
        }
        if peek("LIST") {
            index += 1
            try expectSymbol("<")
            field.type = try fieldType()
            try expectSymbol(">")
            field.isList = true
        } else {
            field.type = try fieldType()
        }
        while true {
            if peek("QUERYABLE") {
                field.queryable = true
            } else if peek("SORTABLE") {
                field.sortable = true
            } else if peek("SEARCHABLE") {
                field.searchable = true
            } else {
                break
            }
            index += 1
        }
        if field.searchable && field.type != "STRING" { throw error("only STRING fields can be SEARCHABLE") }
        return field
    }

    mutating func fieldType() throws(Schema.ParseError) -> String {
        let type = try name("a field type").uppercased()
        guard Schema.fieldTypes.contains(type) else {
            index -= 1
            throw error("unknown field type \(type); expected one of \(Schema.fieldTypes.sorted().joined(separator: ", "))")
        }
        return type
    }

    mutating func grant() throws(Schema.ParseError) -> Schema.Grant {
        try expect("GRANT")
        var permissions = [try permission()]
        // `GRANT READ, WRITE TO role`: a comma followed by a permission continues the list; any other
        // comma separates the record type's members.
        while index + 1 < tokens.count, tokens[index].kind == .symbol, tokens[index].text == ",", tokens[index + 1].kind == .word,
            Schema.Grant.Permission(rawValue: tokens[index + 1].text.uppercased()) != nil
        {
            index += 1
            permissions.append(try permission())
        }
        try expect("TO")
        return Schema.Grant(permissions, to: try name("a role"))
    }

    mutating func permission() throws(Schema.ParseError) -> Schema.Grant.Permission {
        let word = try name("READ, CREATE or WRITE").uppercased()
        guard let permission = Schema.Grant.Permission(rawValue: word) else {
            index -= 1
            throw error("unknown permission \(word); expected READ, CREATE or WRITE")
        }
        return permission
    }
}
