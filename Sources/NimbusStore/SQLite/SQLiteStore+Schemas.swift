import GRDB

extension SQLiteStore: SchemaStore {
    public func schemaText(container: String, environment: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(
                db, sql: "SELECT text FROM schemas WHERE container = ? AND environment = ?", arguments: [container, environment])
        }
    }

    public func updateSchemaText(container: String, environment: String, _ update: @escaping @Sendable (String?) throws -> String)
        async throws -> String
    {
        try await write { db in
            let current = try String.fetchOne(
                db, sql: "SELECT text FROM schemas WHERE container = ? AND environment = ?", arguments: [container, environment])
            let text = try update(current)
            try db.execute(
                sql: """
                    INSERT INTO schemas (container, environment, text) VALUES (?, ?, ?)
                    ON CONFLICT (container, environment) DO UPDATE SET text = excluded.text
                    """, arguments: [container, environment, text])
            return text
        }
    }
}
