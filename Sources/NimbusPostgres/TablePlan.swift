import Foundation
import GRDB
import NimbusStore
import PostgresNIO

/// How one table's rows go from SQLite to PostgreSQL and are compared: its columns in one order for both
/// (PostgreSQL's), the SQLite statements that read it page by page, and the PostgreSQL statements that
/// write it and read it back.
///
/// The one column that differs is the index's value: SQLite keeps numbers and text in one dynamically
/// typed `value`, PostgreSQL in `number` (exact, `numeric`) or `text`, as `IndexColumns` writes them.
struct TablePlan: Sendable {
    let table: String
    /// The columns as both sides are compared: PostgreSQL's, with `number` and `text` as one `value`.
    private let columns: [String]
    private let target: [TargetColumn]
    private let primaryKey: [Int]
    /// For each target column, the position in `columns` of the value it takes.
    private let sourcePositions: [Int]
    private let splitsIndexValue: Bool
    /// Rows per page: PostgreSQL takes at most 65,535 parameters a statement, and a page is held in memory.
    private let pageSize: Int

    init(table: String, source: SourceTable, target: [TargetColumn]) throws {
        self.table = table
        self.target = target
        let splitsIndexValue = table == "entry_index"
        self.splitsIndexValue = splitsIndexValue
        var columns = target.map(\.name)
        if splitsIndexValue {
            guard let number = columns.firstIndex(of: "number"), columns.contains("text") else {
                throw EmbeddedToPostgres.Failure.unknownSchema("entry_index lacks number or text in PostgreSQL")
            }
            columns[number] = "value"
            columns.removeAll { $0 == "text" }
        }
        guard Set(columns) == Set(source.columns) else {
            throw EmbeddedToPostgres.Failure.unknownSchema(
                "\(table) has columns \(source.columns.sorted()) in SQLite and \(columns.sorted()) in PostgreSQL")
        }
        self.columns = columns
        primaryKey = source.primaryKey.compactMap { columns.firstIndex(of: $0) }
        sourcePositions = target.map { column in
            columns.firstIndex(of: splitsIndexValue && ["number", "text"].contains(column.name) ? "value" : column.name)!
        }
        pageSize = min(500, 60_000 / target.count)
    }

    // MARK: Reading SQLite

    /// Every row, in the compared order of columns.
    var sourceSelect: String { "SELECT \(columns.joined(separator: ", ")) FROM \(table)" }

    /// The rows after `after` (a primary key, in the order of the key's columns), a page of them.
    func page(_ db: Database, after: [DatabaseValue]?) throws -> [[DatabaseValue]] {
        let key = primaryKey.map { columns[$0] }.joined(separator: ", ")
        let condition =
            after == nil ? "" : "WHERE (\(key)) > (\(Array(repeating: "?", count: primaryKey.count).joined(separator: ", ")))"
        let rows = try Row.fetchAll(
            db, sql: "\(sourceSelect) \(condition) ORDER BY \(key) LIMIT \(pageSize)",
            arguments: StatementArguments(after ?? []))
        return rows.map { Array($0.databaseValues) }
    }

    /// A row's primary key, to read the next page after.
    func key(of row: [DatabaseValue]) -> [DatabaseValue] { primaryKey.map { row[$0] } }

    /// A source row as it is compared.
    func canonical(_ row: [DatabaseValue]) throws -> [CopiedValue] {
        try zip(columns, row).map { name, value in
            if splitsIndexValue, name == "value" { return try Self.canonicalIndexValue(value) }
            return Self.canonical(value)
        }
    }

    private static func canonical(_ value: DatabaseValue) -> CopiedValue {
        switch value.storage {
        case .null: .null
        case .int64(let integer): .integer(integer)
        case .double(let real): .real(real)
        case .string(let text): .text(text)
        case .blob(let bytes): .bytes(bytes)
        }
    }

    private static func canonicalIndexValue(_ value: DatabaseValue) throws -> CopiedValue {
        switch value.storage {
        case .int64(let integer): return .integer(integer)
        case .double(let real): return CopiedValue.indexNumber(real)
        case .string(let text): return .text(IndexColumns.text(text))
        case .null, .blob: throw EmbeddedToPostgres.Failure.unknownSchema("an index row whose value is neither a number nor text")
        }
    }

    // MARK: Writing and reading PostgreSQL

    /// One statement inserting `rows` (source rows, in the compared order of columns).
    func insert(_ rows: [[DatabaseValue]]) throws -> PostgresQuery {
        var bindings = PostgresBindings(capacity: rows.count * target.count)
        var tuples = [String]()
        tuples.reserveCapacity(rows.count)
        for row in rows {
            var placeholders = [String]()
            for (column, position) in zip(target, sourcePositions) {
                let value =
                    splitsIndexValue && columns[position] == "value"
                    ? Self.split(row[position], into: column.name) : row[position]
                try Self.bind(value, as: column, table: table, into: &bindings)
                placeholders.append("$\(bindings.count)::\(column.type)")
            }
            tuples.append("(\(placeholders.joined(separator: ", ")))")
        }
        let overriding = target.contains(where: \.isIdentity) ? " OVERRIDING SYSTEM VALUE" : ""
        return PostgresQuery(
            unsafeSQL: """
                INSERT INTO \(table) (\(target.map(\.name).joined(separator: ", ")))\(overriding) VALUES \(tuples.joined(separator: ", "))
                """, binds: bindings)
    }

    /// The part of an index value that goes into PostgreSQL's `column` (`number` or `text`), as
    /// `IndexColumns` writes it; null in the other.
    private static func split(_ value: DatabaseValue, into column: String) -> DatabaseValue {
        switch (value.storage, column) {
        case (.int64(let integer), "number"): String(integer).databaseValue
        case (.double(let real), "number"): IndexColumns.numeric(real).databaseValue
        case (.string(let text), "text"): IndexColumns.text(text).databaseValue
        default: .null
        }
    }

    private static func bind(
        _ value: DatabaseValue, as column: TargetColumn, table: String, into bindings: inout PostgresBindings
    )
        throws
    {
        switch (value.storage, column.type) {
        case (.null, _): bindings.appendNull()
        case (.int64(let integer), "boolean"): bindings.append(integer != 0)
        case (.int64(let integer), "bigint"), (.int64(let integer), "integer"): bindings.append(integer)
        case (.int64(let integer), "double precision"): bindings.append(Double(integer))
        case (.double(let real), "double precision"): bindings.append(real)
        case (.string(let text), "text"), (.string(let text), "numeric"): bindings.append(text)
        case (.blob(let bytes), "bytea"): bindings.append(ByteBuffer(bytes: bytes))
        default:
            throw EmbeddedToPostgres.Failure.unknownSchema(
                "\(table).\(column.name) holds \(value) in SQLite, which does not go into \(column.type)")
        }
    }

    /// Every row of the table in PostgreSQL, its columns in the target's order (`numeric` as text).
    var selectAll: PostgresQuery {
        let list = target.map { $0.type == "numeric" ? "\($0.name)::text" : $0.name }.joined(separator: ", ")
        return PostgresQuery(unsafeSQL: "SELECT \(list) FROM \(table)")
    }

    /// A row read back from PostgreSQL as it is compared.
    func canonical(_ row: PostgresRow) throws -> [CopiedValue] {
        var values = [String: CopiedValue]()
        for (column, cell) in zip(target, row.makeRandomAccess()) {
            values[column.name] = try Self.canonical(cell, as: column)
        }
        if splitsIndexValue {
            switch (values["number"], values["text"]) {
            case (.text(let number)?, .null?):
                guard let value = CopiedValue.indexNumber(text: number) else {
                    throw EmbeddedToPostgres.Failure.copyDiffers(["an index number read back as \(number)"])
                }
                values["value"] = value
            case (.null?, let text?): values["value"] = text
            default: throw EmbeddedToPostgres.Failure.copyDiffers(["an index row read back with both a number and text"])
            }
        }
        return columns.map { values[$0] ?? .null }
    }

    private static func canonical(_ cell: PostgresCell, as column: TargetColumn) throws -> CopiedValue {
        guard cell.bytes != nil else { return .null }
        switch column.type {
        case "boolean": return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case "bigint", "integer": return .integer(try cell.decode(Int64.self))
        case "double precision": return .real(try cell.decode(Double.self))
        case "bytea": return .bytes(Data(try cell.decode(ByteBuffer.self).readableBytesView))
        default: return .text(try cell.decode(String.self))
        }
    }
}
