import Foundation
import GRDB
import NimbusCore
@testable import NimbusPostgres
@testable import NimbusStore
import NimbusTestingCore
import Testing

/// The copy `nimbus migrate` makes of a SQLite database into PostgreSQL: exact, verified, and all or nothing.
@Suite(.cleansUp) struct EmbeddedToPostgresTests {
    /// A SQLite database holding an account, a key-value zone and a record zone (its records with a
    /// version each in their histories) whose index holds numbers and text each backend keeps in its own way.
    static func source() async throws -> String {
        let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("nimbus.sqlite").path
        let store = try SQLiteStore(path: path)
        try await store.createAccount(
            AccountRecord(id: "_ann", email: "ann@example.com", passwordHash: "-", isAdministrator: false, createdAt: Date()))
        let values = ZoneKey(accountID: "_ann", address: ZoneAddress(service: .keyValue, name: "store"))
        _ = try await store.commit(values, mutations: [EntryMutation(key: "theme", payload: Data("dark".utf8), size: 4)]) { _ in }
        let records = ZoneKey(
            accountID: "_ann",
            address: ZoneAddress(
                service: .records(container: "iCloud.a", environment: "development", database: "private"), name: "Notes"))
        let numbers: [IndexValue] = [
            .integer(.max), .integer(-3), .real(2.5), .real(5.0), .real(1e20), .real(3e15), .real(-0.0), .real(1e-7),
            .text("café ☕︎"), .point(latitude: 48.85, longitude: 2.35),
        ]
        _ = try await store.transactRecords(records, creating: true) { transaction in
            for (number, value) in numbers.enumerated() {
                let key = "note-\(number)"
                try transaction.put(key, payload: Data(key.utf8), size: key.utf8.count)
                try transaction.index(key, kind: "Notes", rows: [IndexEntry(field: "value", value: value)])
                try transaction.noteVersion(key, note: Data("saved \(key)".utf8), first: true)
            }
        }
        return path
    }

    static func target() async throws -> PostgresStore {
        let store = try await PostgresStore.open(try PostgresLocation(url: try await TemporaryPostgres.shared().database()))
        TestResources.current?.onCleanup { store.close() }
        return store
    }

    @Test func everyRowArrivesAndReadsBackTheSame() async throws {
        let path = try await Self.source()
        let target = try await Self.target()
        let report = try await EmbeddedToPostgres.copy(from: path, to: target) { _ in }
        let rows = Dictionary(uniqueKeysWithValues: report.tables.map { ($0.name, $0.rows) })
        #expect(rows["accounts"] == 1 && rows["zones"] == 2 && rows["entries"] == 11 && report.zones == 2)
        #expect(rows["entry_index"] == 20, "a key row and a value row per record")
        // What the store reads through PostgreSQL is what it wrote through SQLite.
        let values = ZoneKey(accountID: "_ann", address: ZoneAddress(service: .keyValue, name: "store"))
        let copied = try await target.liveEntries(values)
        #expect(copied.entries.map(\.key) == ["theme"] && copied.state?.sequence == 1)
        #expect(rows["record_history"] == 10)
        let notes = ZoneKey(
            accountID: "_ann",
            address: ZoneAddress(
                service: .records(container: "iCloud.a", environment: "development", database: "private"), name: "Notes"))
        #expect(try await target.recordHistory(notes, key: "note-3").map(\.note) == [Data("saved note-3".utf8)])
    }

    @Test func aSourceWrittenWhileItIsCopiedIsRefusedAndNothingIsKept() async throws {
        let path = try await Self.source()
        let target = try await Self.target()
        let refused = await #expect(throws: EmbeddedToPostgres.Failure.self) {
            try await EmbeddedToPostgres.copy(from: path, to: target) { step in
                // A server still running on the data directory writes once the teams are copied.
                guard step.hasPrefix("copied zones") else { return }
                // It waits for locks as a server's connection does: the stores opened on the file before
                // checkpoint it as they close, and a connection that gives up at once then fails to open.
                var configuration = Configuration()
                configuration.busyMode = .timeout(10)
                try! DatabaseQueue(path: path, configuration: configuration).write { db in
                    try db.execute(sql: "INSERT INTO teams VALUES ('LATE', 'Late')")
                }
            }
        }
        guard case .sourceChanged(let tables)? = refused else {
            Issue.record("refused for another reason: \(String(describing: refused))")
            return
        }
        #expect(tables.contains { $0.hasPrefix("teams") }, "\(tables)")
        // Nothing was kept: the same target takes the whole copy, the late team with it.
        let report = try await EmbeddedToPostgres.copy(from: path, to: target) { _ in }
        #expect(report.tables.first { $0.name == "teams" }?.rows == 1)
        await #expect(throws: EmbeddedToPostgres.Failure.targetHoldsData(table: "teams")) {
            try await EmbeddedToPostgres.copy(from: path, to: target) { _ in }
        }
    }
}
