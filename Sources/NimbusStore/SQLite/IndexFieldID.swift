import Crypto
import Foundation
import GRDB

/// The integer an index row names its (kind, field) by. Index rows are most of what a record write
/// inserts, and SQLite compares and stores an integer in a fraction of the time and space of two texts.
///
/// The id is a digest of the names rather than a counter, so it never depends on what a transaction
/// rolled back: a batch whose savepoint is undone cannot leave an id that a later batch hands to another
/// field. `index_fields` maps ids back to names; a write adds its fields there in its own transaction,
/// and refuses a field whose id already names another (two names sharing 63 bits of SHA-256).
enum IndexFieldID {
    static func of(kind: String, field: String) -> Int64 {
        let digest = SHA256.hash(data: Data(kind.utf8) + [0] + Data(field.utf8))
        let bits = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int64(bitPattern: bits >> 1)
    }

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
