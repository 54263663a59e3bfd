import GRDB

extension IndexFieldID {
    /// The SQL function migrations compute ids with.
    static let function = DatabaseFunction("nimbus_index_field_id", argumentCount: 2, pure: true) { values in
        guard let kind = String.fromDatabaseValue(values[0]), let field = String.fromDatabaseValue(values[1]) else { return nil }
        return of(kind: kind, field: field)
    }

    /// Records (kind, field) under its id in `db`'s transaction, unless already there.
    ///
    /// - Throws: `StoreError.duplicate` when the id already names another field.
    static func register(_ id: Int64, kind: String, field: String, _ db: Database) throws {
        if let row = try Row.fetchOne(
            try db.cachedStatement(sql: "SELECT kind, field FROM index_fields WHERE id = ?"), arguments: [id])
        {
            guard row["kind"] == kind, row["field"] == field else {
                throw StoreError.duplicate("index field id \(id) of \(kind).\(field)")
            }
            return
        }
        try db.cachedStatement(sql: "INSERT INTO index_fields (id, kind, field) VALUES (?, ?, ?)").execute(
            arguments: [id, kind, field])
    }
}
