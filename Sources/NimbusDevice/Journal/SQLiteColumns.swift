import Foundation
import GRDB
import GRDBSQLite

/// The current row of a statement stepped through SQLite's own API, its columns read by position. An app's
/// first metadata query reads 100,000 rows of each of two tables; through GRDB's `Row` every content hash
/// became a `Data` and every text was measured again with `strlen`, a quarter of the reading.
struct SQLiteColumns {
    private let handle: OpaquePointer

    /// Runs `sql` with `arguments`, handing each row to `body`.
    static func forEachRow(
        _ db: Database, _ sql: String, _ arguments: StatementArguments, _ body: (SQLiteColumns) throws -> Void
    ) throws {
        let statement = try db.makeStatement(sql: sql)
        try statement.setArguments(arguments)
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: try body(SQLiteColumns(handle: handle))
            case SQLITE_DONE: return
            case let code:
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                    sql: sql)
            }
        }
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    func text(_ column: Int32) -> String { bytes(column) { String(decoding: $0, as: UTF8.self) } }

    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    /// The column's text as UTF-8 bytes (valid only inside `body`).
    func bytes<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        // The text first, then its length: SQLite's documented order for a value converted to text.
        let text = sqlite3_column_text(handle, column)
        return body(UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column))))
    }
}
