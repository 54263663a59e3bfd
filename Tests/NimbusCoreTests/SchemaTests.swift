import NimbusCore
import NimbusTestingCore
import Testing

@Suite(.cleansUp) struct SchemaTests {
    static let shoppingList = """
        DEFINE SCHEMA

            CREATE ROLE Editors;

            RECORD TYPE Lists (
                "___recordID" REFERENCE QUERYABLE,
                name          STRING QUERYABLE SORTABLE SEARCHABLE,
                GRANT WRITE TO "_creator",
                GRANT CREATE TO "_icloud",
                GRANT READ TO "_world"
            );

            // Items belong to a list.
            RECORD TYPE Items (
                list     REFERENCE QUERYABLE,
                name     STRING QUERYABLE SORTABLE,
                number   INT64 QUERYABLE SORTABLE,
                tags     LIST<STRING> QUERYABLE,
                note     ENCRYPTED STRING,
                GRANT READ, WRITE TO Editors
            );
        """

    @Test func cloudKitsTextFormatIsRead() throws {
        let schema = try Schema(parsing: Self.shoppingList)
        #expect(schema.roles == ["Editors"])
        #expect(schema.recordTypes.map(\.name) == ["Lists", "Items"])
        let lists = schema.recordTypes[0]
        #expect(lists.fields[0] == Schema.Field(name: "___recordID", type: "REFERENCE", queryable: true))
        #expect(lists.fields[1] == Schema.Field(name: "name", type: "STRING", queryable: true, sortable: true, searchable: true))
        #expect(lists.grants == [.init([.write], to: "_creator"), .init([.create], to: "_icloud"), .init([.read], to: "_world")])
        let items = schema.recordTypes[1]
        #expect(items.fields.first { $0.name == "tags" }?.wireType == "STRING_LIST")
        #expect(items.fields.first { $0.name == "note" }?.isEncrypted == true)
        #expect(items.grants == [.init([.read, .write], to: "Editors")])
    }

    @Test func printedSchemasReadBackUnchanged() throws {
        let schema = try Schema(parsing: Self.shoppingList)
        #expect(try Schema(parsing: schema.text) == schema)
        #expect(schema.text.contains(#""___recordID" REFERENCE QUERYABLE"#))
        #expect(schema.text.contains("tags LIST<STRING> QUERYABLE"))
    }

    @Test(arguments: [
        ("RECORD TYPE A ( a STRING );", 1, 1, "expected DEFINE"),
        ("DEFINE SCHEMA\n RECORD TYPE A (\n  a WIDGET\n);", 3, 5, "unknown field type WIDGET"),
        ("DEFINE SCHEMA RECORD TYPE A ( a INT64 SEARCHABLE );", 1, 50, "only STRING fields"),
        ("DEFINE SCHEMA RECORD TYPE A ( a STRING, a INT64 );", 1, 49, "defined twice"),
        ("DEFINE SCHEMA RECORD TYPE A ( GRANT FLY TO x );", 1, 37, "unknown permission FLY"),
        ("DEFINE SCHEMA RECORD TYPE A ( a STRING )", 1, 41, "expected ;"),
        ("DEFINE SCHEMA RECORD TYPE \"A ( a STRING );", 1, 27, "unterminated"),
    ])
    func mistakesAreReportedWhereTheyAre(_ text: String, _ line: Int, _ column: Int, _ message: String) {
        let error = #expect(throws: Schema.ParseError.self) { try Schema(parsing: text) }
        #expect(error?.line == line, "\(error?.description ?? "")")
        #expect(error?.column == column, "\(error?.description ?? "")")
        #expect(error?.message.contains(message) == true, "\(error?.description ?? "")")
    }
}

@Suite(.cleansUp) struct SchemaDiffTests {
    static func production() throws -> Schema {
        try Schema(
            parsing: """
                DEFINE SCHEMA
                    RECORD TYPE Items ( name STRING QUERYABLE, GRANT READ TO "_world" );
                """)
    }

    @Test func addingFieldsTypesAndIndexesIsDeployable() throws {
        let development = try Schema(
            parsing: """
                DEFINE SCHEMA
                    CREATE ROLE Editors;
                    RECORD TYPE Items ( name STRING QUERYABLE SORTABLE, number INT64, GRANT READ TO "_world" );
                    RECORD TYPE Lists ( title STRING );
                """)
        let diff = SchemaDiff(from: try Self.production(), to: development)
        #expect(diff.isDeployable)
        #expect(
            diff.changes == [
                .addRole("Editors"),
                .addIndex(recordType: "Items", field: "name", index: "SORTABLE"),
                .addField(recordType: "Items", field: "number", type: "INT64"),
                .addRecordType("Lists"),
                .addField(recordType: "Lists", field: "title", type: "STRING"),
            ])
        #expect(SchemaDiff(from: development, to: development).changes.isEmpty)
    }

    @Test func removalsAndTypeChangesAreRefused() throws {
        let retyped = try Schema(parsing: "DEFINE SCHEMA RECORD TYPE Items ( name INT64 QUERYABLE );")
        let diff = SchemaDiff(from: try Self.production(), to: retyped)
        #expect(!diff.isDeployable)
        #expect(diff.violations == [.changesFieldType(recordType: "Items", field: "name", from: "STRING", to: "INT64")])
        #expect(diff.changes == [.changeGrants(recordType: "Items")])
        let emptied = SchemaDiff(from: try Self.production(), to: Schema())
        #expect(emptied.violations == [.removesRecordType("Items")])
        let fieldless = SchemaDiff(from: try Self.production(), to: try Schema(parsing: "DEFINE SCHEMA RECORD TYPE Items ( );"))
        #expect(fieldless.violations.map(\.description) == ["field Items.name exists in production and cannot be removed"])
    }
}
