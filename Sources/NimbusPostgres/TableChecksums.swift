import Crypto
import Foundation

/// One column's value as both backends' copies of a row are compared: the storage classes SQLite has,
/// with PostgreSQL's booleans as integers, and numbers of the index in one form whichever backend wrote them.
enum CopiedValue: Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bytes(Data)

    /// An index number: whole numbers that fit 64 bits as integers (SQLite may hold 5 as the real 5.0, and
    /// PostgreSQL's `numeric` gives it back as "5.0"), anything else as a real.
    static func indexNumber(_ number: Double) -> CopiedValue {
        if number.rounded() == number, abs(number) < 9.2e18 { return .integer(Int64(number)) }
        return .real(number)
    }

    /// An index number as PostgreSQL's `numeric` prints it.
    static func indexNumber(text: String) -> CopiedValue? {
        if let integer = Int64(text) { return .integer(integer) }
        return Double(text).map(indexNumber)
    }

    fileprivate func append(to hasher: inout SHA256) {
        func tagged(_ tag: UInt8, _ bytes: some DataProtocol) {
            hasher.update(data: [tag])
            withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: bytes)
        }
        switch self {
        case .null: hasher.update(data: [0])
        case .integer(let integer): withUnsafeBytes(of: integer.littleEndian) { tagged(1, Array($0)) }
        case .real(let real):
            // One zero and one NaN: the backends may keep either sign of zero and any NaN's payload.
            let canonical = real == 0 ? 0 : (real.isNaN ? .nan : real)
            withUnsafeBytes(of: canonical.bitPattern.littleEndian) { tagged(2, Array($0)) }
        case .text(let text): tagged(3, Array(text.utf8))
        case .bytes(let bytes): tagged(4, bytes)
        }
    }
}

/// What a table holds, in a form both backends' copies can be compared by without putting rows in the
/// same order (their text orders differ): the row count and, over all rows, the sum of each row's
/// SHA-256. Rows of a table are distinct (each has a primary key), so equal sums mean equal rows short of
/// a deliberate collision.
struct TableChecksum: Equatable, CustomStringConvertible {
    private(set) var rows = 0
    private var sum: [UInt64] = [0, 0, 0, 0]

    mutating func add(_ row: [CopiedValue]) {
        var hasher = SHA256()
        for value in row { value.append(to: &hasher) }
        let digest = Array(hasher.finalize())
        for lane in 0..<4 {
            let word = digest[(lane * 8)..<(lane * 8 + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            sum[lane] &+= word
        }
        rows += 1
    }

    var description: String { "\(rows) rows, sum \(sum.map { String($0, radix: 16) }.joined(separator: ":"))" }
}

/// The checksums of every table copied, and of each zone's entries and index rows.
struct CopyChecksums: Equatable {
    var tables: [String: TableChecksum] = [:]
    /// By table (entries, entry_index), then by zone.
    var zones: [String: [Int64: TableChecksum]] = [:]

    /// Tables whose rows are checked zone by zone as well (their first column is the zone).
    static let zoneTables: Set<String> = ["entries", "entry_index"]

    mutating func add(_ row: [CopiedValue], to table: String) {
        tables[table, default: TableChecksum()].add(row)
        if Self.zoneTables.contains(table), case .integer(let zone) = row[0] {
            zones[table, default: [:]][zone, default: TableChecksum()].add(row)
        }
    }

    /// What differs from `other`, in words; empty when nothing does.
    func differences(from other: CopyChecksums) -> [String] {
        var found = [String]()
        for table in Set(tables.keys).union(other.tables.keys).sorted() where tables[table] != other.tables[table] {
            found.append(
                "\(table): \(tables[table]?.description ?? "no rows") against \(other.tables[table]?.description ?? "no rows")")
        }
        for table in Set(zones.keys).union(other.zones.keys).sorted() {
            let mine = zones[table] ?? [:]
            let theirs = other.zones[table] ?? [:]
            for zone in Set(mine.keys).union(theirs.keys).sorted() where mine[zone] != theirs[zone] {
                found.append("\(table) of zone \(zone) differs")
            }
        }
        return found
    }
}
