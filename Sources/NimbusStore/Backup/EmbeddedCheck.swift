import Crypto
import Foundation
import GRDB
import NIOCore
import NimbusCore

/// A blob a live entry names: a document chunk (named by its SHA-256) or an asset file (with the checksum
/// its record holds, base64 SHA-256, when it has one).
package enum BlobReference: Hashable, Sendable {
    case chunk(hash: String)
    case asset(id: String, checksum: String?)
}

/// The index rows a live entry must have, under its kind; rows under `optionalFields` depend on more than
/// the entry (a schema, a share) and may be there or not.
package struct ExpectedIndexRows: Sendable {
    package var kind: String
    package var rows: Set<IndexEntry>
    package var optionalFields: Set<String>

    package init(kind: String, rows: Set<IndexEntry>, optionalFields: Set<String> = []) {
        self.kind = kind
        self.rows = rows
        self.optionalFields = optionalFields
    }
}

/// What `nimbus check` found: problems (any makes the check fail) and what was looked at.
package struct CheckReport: Sendable {
    package var problems: [String] = []
    package var checked: [String] = []

    package var isHealthy: Bool { problems.isEmpty }
}

/// Checks an embedded data directory without changing it: SQLite's own integrity and foreign key checks,
/// each zone's sequence and counters against its entries, index rows against the entries they belong to,
/// and every blob a live entry names (present, and its bytes hashing as named or recorded), read through the
/// blob store wherever it keeps them (the directory's folder or a bucket). A server may be running on the
/// directory: the database is read in one read transaction, and a blob found missing is a problem only if a
/// live entry still names it afterwards (the server's collector may have deleted it since that read, once
/// the entries naming it were gone).
package struct EmbeddedCheck {
    let data: EmbeddedDataDirectory
    let blobs: any BlobStore
    /// The blobs a live payload of a zone of that kind names; the services know their payloads.
    let references: @Sendable (ZoneAddress.Service.Kind, Data) throws -> [BlobReference]
    /// The index rows a live entry (kind, key, payload) must have; nil for entries it does not know.
    let expectedIndex: @Sendable (ZoneAddress.Service.Kind, String, Data) throws -> ExpectedIndexRows?

    package init(
        data: EmbeddedDataDirectory, blobs: any BlobStore,
        references: @escaping @Sendable (ZoneAddress.Service.Kind, Data) throws -> [BlobReference],
        expectedIndex: @escaping @Sendable (ZoneAddress.Service.Kind, String, Data) throws -> ExpectedIndexRows?
    ) {
        self.data = data
        self.blobs = blobs
        self.references = references
        self.expectedIndex = expectedIndex
    }

    package func run() async throws -> CheckReport {
        guard FileManager.default.fileExists(atPath: data.database.path) else {
            throw BackupError(.notFound, "\(data.url.path) holds no Nimbus database (\(data.database.lastPathComponent))")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        let queue = try DatabaseQueue(path: data.database.path, configuration: configuration)
        defer { try? queue.close() }
        var (report, referenced) = try await BlockingWork.run {
            var report = CheckReport()
            let referenced = try queue.read { db in
                try checkDatabase(db, &report)
                try checkZones(db, &report)
                try checkIndexRows(db, &report)
                return try referencedBlobs(db, &report)
            }
            return (report, referenced)
        }
        let missing = try await checkBlobs(referenced, &report)
        guard !missing.isEmpty else { return report }
        // Named by the snapshot, gone from the store: a problem only if something still names them.
        referenced = try await BlockingWork.run {
            var ignored = CheckReport()
            return try queue.read { db in try referencedBlobs(db, &ignored) }
        }
        for name in missing.sorted() where referenced[name] != nil {
            report.problems.append("blob \(name) is named by a live entry and missing")
        }
        return report
    }

    private func checkDatabase(_ db: Database, _ report: inout CheckReport) throws {
        let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
        if integrity != ["ok"] { report.problems += integrity.map { "SQLite integrity check: \($0)" } }
        let foreignKeys = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
        for row in foreignKeys {
            report.problems.append(
                "a row of \(row[0] as String? ?? "?") (rowid \(row[1] as Int64? ?? 0)) names a missing \(row[2] as String? ?? "?") row"
            )
        }
        report.checked.append("database: SQLite integrity and foreign keys")
    }

    /// Each zone's sequence is past all its entries' and unique to one entry, and its counters add up; no
    /// zone changed after its service's sequence; no device acknowledged a change its zone has not made.
    private func checkZones(_ db: Database, _ report: inout CheckReport) throws {
        let zones = try Row.fetchAll(
            db,
            sql: """
                SELECT z.id, z.account_id, z.service, z.name, z.sequence, z.live_entries, z.live_bytes,
                    (SELECT max(sequence) FROM entries e WHERE e.zone_id = z.id) AS latest,
                    (SELECT count(*) FROM entries e WHERE e.zone_id = z.id AND e.payload IS NOT NULL) AS live,
                    (SELECT coalesce(sum(size), 0) FROM entries e WHERE e.zone_id = z.id AND e.payload IS NOT NULL) AS bytes,
                    (SELECT sequence FROM service_sequences s WHERE s.account_id = z.account_id AND s.service = z.service)
                        AS service_sequence,
                    z.changed_at
                FROM zones z
                """)
        // Read as optionals: a damaged file may hold NULL where the schema allows none, and the check
        // reports damage rather than stopping at it.
        for zone in zones {
            let id: Int64? = zone["id"]
            let name = "zone \(id ?? -1) (\(zone["service"] as String? ?? "?") \(zone["name"] as String? ?? "?"))"
            let sequence: Int64 = zone["sequence"] ?? -1
            if let latest: Int64 = zone["latest"], latest > sequence {
                report.problems.append("\(name): an entry has sequence \(latest), past the zone's \(sequence)")
            }
            let (counted, countedBytes): (Int64?, Int64?) = (zone["live_entries"], zone["live_bytes"])
            let (held, heldBytes): (Int64, Int64) = (zone["live"] ?? 0, zone["bytes"] ?? 0)
            if counted != held || countedBytes != heldBytes {
                report.problems.append(
                    "\(name): counts \(counted ?? -1) entries of \(countedBytes ?? -1) bytes, holds \(held) of \(heldBytes)")
            }
            let changedAt: Int64 = zone["changed_at"] ?? 0
            if (zone["service_sequence"] as Int64? ?? 0) < changedAt {
                report.problems.append("\(name): changed at \(changedAt), past its service's sequence")
            }
        }
        let ahead = try Row.fetchAll(
            db,
            sql: """
                SELECT w.device_id, w.zone_id, w.sequence, z.sequence AS current FROM device_watermarks w
                JOIN zones z ON z.id = w.zone_id WHERE w.sequence > z.sequence
                """)
        for row in ahead {
            report.problems.append(
                "device \(row["device_id"] as String? ?? "?") acknowledged change \(row["sequence"] as Int64? ?? -1) of zone \(row["zone_id"] as Int64? ?? -1), which is at \(row["current"] as Int64? ?? -1)"
            )
        }
        report.checked.append("zones: \(zones.count), their sequences and counters")
    }

    /// Every index row belongs to the current version of a live entry (a row left from a replaced or
    /// deleted version would match queries it should not), under a known field; and each live entry has
    /// exactly the rows its payload gives it (a missing row hides it from queries).
    private func checkIndexRows(_ db: Database, _ report: inout CheckReport) throws {
        try checkOrphanRows(db, &report)
        let rowsOf = try db.makeStatement(
            sql: """
                SELECT f.kind, f.field, i.position, i.value, i.longitude FROM entry_index i
                LEFT JOIN index_fields f ON f.id = i.field WHERE i.zone_id = ? AND i.sequence = ?
                """)
        var entries = 0
        var mismatched = 0
        for kind in [ZoneAddress.Service.Kind.records, .documents] {
            let cursor = try Row.fetchCursor(
                db,
                sql: """
                    SELECT e.zone_id, e.key, e.sequence, e.payload FROM entries e JOIN zones z ON z.id = e.zone_id
                    WHERE z.kind = ? AND e.payload IS NOT NULL
                    """, arguments: [kind.rawValue])
            while let entry = try cursor.next() {
                let (zone, key, sequence): (Int64, String, Int64?) = (entry["zone_id"], entry["key"], entry["sequence"])
                let expected: ExpectedIndexRows?
                do {
                    expected = try expectedIndex(kind, key, entry["payload"])
                } catch {
                    report.problems.append("zone \(zone): entry \(key) does not decode (\(error))")
                    continue
                }
                guard let expected else { continue }
                entries += 1
                var stored = Set<IndexEntry>()
                var kinds = Set<String>()
                for row in try Row.fetchAll(rowsOf, arguments: [zone, sequence]) {
                    kinds.insert(row["kind"] ?? "?")
                    stored.insert(IndexEntry(field: row["field"] ?? "?", position: row["position"], value: Self.indexValue(row)))
                }
                let missing = expected.rows.subtracting(stored)
                let unexpected = stored.subtracting(expected.rows).filter { !expected.optionalFields.contains($0.field) }
                guard !missing.isEmpty || !unexpected.isEmpty || kinds.subtracting([expected.kind]).count > 0 else { continue }
                mismatched += 1
                if mismatched <= 100 {
                    report.problems.append(
                        "zone \(zone): entry \(key)'s index rows differ from its payload's (\(missing.count) missing, \(unexpected.count) not its own, kinds \(kinds.sorted()) for \(expected.kind))"
                    )
                }
            }
        }
        if mismatched > 100 { report.problems.append("… and \(mismatched - 100) more entries whose index rows differ") }
        report.checked.append("index rows of \(entries) entries against their payloads")
    }

    private static func indexValue(_ row: Row) -> IndexValue {
        let value: DatabaseValue = row["value"]
        if let longitude: Double = row["longitude"] {
            return .point(latitude: Double.fromDatabaseValue(value) ?? .nan, longitude: longitude)
        }
        switch value.storage {
        case .int64(let integer): return .integer(integer)
        case .double(let real): return .real(real)
        case .string(let text): return .text(text)
        case .blob(let bytes): return .text(String(decoding: bytes, as: UTF8.self))
        case .null: return .text("")
        }
    }

    private func checkOrphanRows(_ db: Database, _ report: inout CheckReport) throws {
        let orphans = try Row.fetchAll(
            db,
            sql: """
                SELECT i.zone_id, i.sequence, count(*) AS rows FROM entry_index i
                WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.zone_id = i.zone_id AND e.sequence = i.sequence
                    AND e.payload IS NOT NULL)
                GROUP BY i.zone_id, i.sequence LIMIT 100
                """)
        for row in orphans {
            report.problems.append(
                "zone \(row["zone_id"] as Int64): \(row["rows"] as Int) index rows name version \(row["sequence"] as Int64), which no live entry has"
            )
        }
        let unknownFields =
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM entry_index WHERE field NOT IN (SELECT id FROM index_fields)") ?? 0
        if unknownFields > 0 { report.problems.append("\(unknownFields) index rows name a field that is not in index_fields") }
        let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM entry_index") ?? 0
        report.checked.append("index rows: \(rows), each of a live entry's current version")
    }

    private func referencedBlobs(_ db: Database, _ report: inout CheckReport) throws -> [String: Set<BlobReference>] {
        var referenced: [String: Set<BlobReference>] = [:]
        for kind in [ZoneAddress.Service.Kind.records, .documents] {
            let cursor = try Data.fetchCursor(
                db,
                sql: """
                    SELECT e.payload FROM entries e JOIN zones z ON z.id = e.zone_id
                    WHERE z.kind = ? AND e.payload IS NOT NULL
                    """, arguments: [kind.rawValue])
            while let payload = try cursor.next() {
                let named: [BlobReference]
                do {
                    named = try references(kind, payload)
                } catch {
                    // The index pass reports the entry as one that does not decode.
                    continue
                }
                for reference in named {
                    switch reference {
                    case .chunk(let hash): referenced[hash, default: []].insert(reference)
                    case .asset(let id, _): referenced[id.lowercased(), default: []].insert(reference)
                    }
                }
            }
        }
        return referenced
    }

    /// Every named blob is there and hashes as named (a chunk) or as its record says (an asset); the names of
    /// those not there, for `run` to ask about again. A store that fails otherwise (a bucket out of reach)
    /// fails the check with its own error rather than have every blob reported missing.
    private func checkBlobs(_ referenced: [String: Set<BlobReference>], _ report: inout CheckReport) async throws
        -> Set<String>
    {
        var bytes: Int64 = 0
        var missing = Set<String>()
        for (name, references) in referenced.sorted(by: { $0.key < $1.key }) {
            guard LocalBlobStore.isBlobName(name) else {
                report.problems.append("blob \(name) is named by a live entry and missing")
                continue
            }
            var hasher = SHA256()
            var size: Int64 = 0
            do {
                try await blobs.read(name, range: nil) { buffer in
                    buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                    size += Int64(buffer.readableBytes)
                }
            } catch StoreError.missing {
                missing.insert(name)
                continue
            }
            let sha256 = hasher.finalize().map { String(format: "%02x", $0) }.joined()
            bytes += size
            for reference in references {
                switch reference {
                case .chunk(let hash) where hash != sha256:
                    report.problems.append("chunk \(hash) holds bytes whose SHA-256 is \(sha256)")
                case .asset(let id, let checksum?) where checksum != Self.base64(hex: sha256):
                    report.problems.append("asset \(id) holds bytes whose checksum is not the record's \(checksum)")
                default: break
                }
            }
        }
        report.checked.append("blobs: \(referenced.count) named by live entries, \(bytes) bytes read")
        return missing
    }

    private static func base64(hex: String) -> String {
        let digits = Array(hex.utf8)
        var bytes = [UInt8]()
        for index in stride(from: 0, to: digits.count - 1, by: 2) {
            bytes.append(UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) ?? 0)
        }
        return Data(bytes).base64EncodedString()
    }
}
