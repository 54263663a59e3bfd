import Foundation
import GRDB
import NimbusCore
import NimbusStore

/// Commits timed alone on the disk, synced as the server syncs (WAL, `synchronous = FULL`), in scratch
/// databases in a given directory (removed afterwards). Sequential writes can be acknowledged no faster
/// than one HTTP round trip plus their commit each; the 4 KiB sync row is the bound only for a design that
/// synced a single page per write, since a commit writes a 4 KiB frame per page it changes.
package enum CommitFloor {
    /// Mean microseconds for the smallest commit a key-value write makes: the entry upserted (its row and
    /// its sequence index), the zone's row and the account's change counter updated.
    static func keyValueCommitMicroseconds(in directory: URL, count: Int) throws -> Double {
        let path = directory.appendingPathComponent("commit-probe.sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(
                sql: """
                    CREATE TABLE entries (zone INTEGER, key TEXT, payload BLOB, sequence INTEGER, PRIMARY KEY (zone, key)) WITHOUT ROWID;
                    CREATE UNIQUE INDEX entries_by_sequence ON entries(zone, sequence);
                    CREATE TABLE zones (id INTEGER PRIMARY KEY, sequence INTEGER);
                    CREATE TABLE counters (account TEXT PRIMARY KEY, sequence INTEGER) WITHOUT ROWID;
                    INSERT INTO zones VALUES (1, 0);
                    INSERT INTO counters VALUES ('a', 0);
                    """)
        }
        // Keys cycle through a thousand entries: nothing but the commit is timed (a random draw would
        // add a system call to each).
        let payload = Data(count: 100)
        let start = ContinuousClock.now
        for sequence in 1...count {
            try queue.write { db in
                try db.cachedStatement(
                    sql: """
                        INSERT INTO entries VALUES (1, ?, ?, ?)
                        ON CONFLICT (zone, key) DO UPDATE SET payload = excluded.payload, sequence = excluded.sequence
                        """
                ).execute(arguments: ["key-\(sequence % 1000)", payload, sequence])
                try db.cachedStatement(sql: "UPDATE zones SET sequence = sequence + 1 WHERE id = 1").execute()
                try db.cachedStatement(sql: "UPDATE counters SET sequence = sequence + 1 WHERE account = 'a'").execute()
            }
        }
        return (ContinuousClock.now - start).milliseconds * 1000 / Double(count)
    }

    /// Mean microseconds for the store (`SQLiteStore`, as the server runs it) to commit one new record of
    /// the kind the save benchmarks write, alone: its entry and the five index rows the server gives it
    /// (the record name, its creator, the text and its two words), in a zone that already holds
    /// `count` such records, as the benchmark's zone does. A sequential save is acknowledged no faster than
    /// one HTTP round trip plus this, whatever the server does besides.
    package static func recordSaveCommitMicroseconds(in directory: URL, count: Int) async throws -> Double {
        let path = directory.appendingPathComponent("record-probe.sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let store = try SQLiteStore(path: path)
        let owner = Secrets.userRecordName()
        try await store.createAccount(
            AccountRecord(id: owner, email: "probe@bench.local", passwordHash: "-", isAdministrator: false, createdAt: Date()))
        let zone = ZoneKey(
            accountID: owner,
            address: ZoneAddress(
                service: .records(container: "iCloud.com.example.Bench", environment: "development", database: "private"),
                name: "_defaultZone"))
        let payload = Data(count: 300)
        func save(_ number: Int) async throws {
            let rows = [
                IndexEntry(field: "___createdBy", value: .text(owner)),
                IndexEntry(field: "text", value: .text("a note")), IndexEntry(field: "tokens:text", value: .text("a")),
                IndexEntry(field: "tokens:text", position: 1, value: .text("note")),
            ]
            // Names that grow, as the SDK's time-ordered ones do.
            let key = String(format: "note-%09d", number)
            _ = try await store.transact(zone, creating: true) { transaction in
                try transaction.put(key, payload: payload, size: payload.count)
                try transaction.index(key, kind: "Notes", rows: rows)
            }
        }
        for number in 0..<count { try await save(number) }
        let start = ContinuousClock.now
        for number in count..<(2 * count) { try await save(number) }
        return (ContinuousClock.now - start).milliseconds * 1000 / Double(count)
    }
}
