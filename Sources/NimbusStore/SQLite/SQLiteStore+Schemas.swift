import GRDB

extension SQLiteStore: SchemaStore {
    public func schemaText(container: String, environment: String) async throws -> String? {
        try await read { db in try Self.schemaText(db, container: container, environment: environment) }
    }

    public func updateSchemaText(container: String, environment: String, _ update: @escaping @Sendable (String?) throws -> String)
        async throws -> String
    {
        try await write { db in
            let text = try update(try Self.schemaText(db, container: container, environment: environment))
            try Self.setSchemaText(db, text, container: container, environment: environment)
            return text
        }
    }

    static func schemaText(_ db: Database, container: String, environment: String) throws -> String? {
        try String.fetchOne(
            try db.cachedStatement(sql: "SELECT text FROM schemas WHERE container = ? AND environment = ?"),
            arguments: [container, environment])
    }

    static func setSchemaText(_ db: Database, _ text: String, container: String, environment: String) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO schemas (container, environment, text) VALUES (?, ?, ?)
                ON CONFLICT (container, environment) DO UPDATE SET text = excluded.text
                """
        ).execute(arguments: [container, environment, text])
    }
}
