import Foundation
import NimbusCore
import NimbusStore
import NimbusTestingCore
import Testing

/// Records' histories (`RecordZoneTransaction.noteVersion`), run per backend.
@Suite(.cleansUp) struct RecordHistoryConformanceTests {
    func makeZone(_ store: any Store, _ name: String = "Notes") async throws -> ZoneKey {
        let accountID = Secrets.userRecordName()
        try await store.createAccount(
            AccountRecord(
                id: accountID, email: "\(accountID)@example.com", passwordHash: "x", isAdministrator: false, createdAt: Date()))
        return ZoneKey(accountID: accountID, address: ZoneAddress(service: IndexConformanceTests.service, name: name))
    }

    /// Saves `key` once per note, each in a transaction of its own; the sequences written.
    @discardableResult
    func save(_ store: any Store, _ zone: ZoneKey, _ key: String, notes: [String]) async throws -> [Int64] {
        var sequences = [Int64]()
        for note in notes {
            let (sequence, _) = try await store.transactRecords(zone, creating: true) { transaction in
                let sequence = try transaction.put(key, payload: Data(note.utf8), size: note.utf8.count)
                try transaction.noteVersion(key, note: Data(note.utf8), first: false)
                return sequence
            }
            sequences.append(sequence)
        }
        return sequences
    }

    func history(_ store: any Store, _ zone: ZoneKey, _ key: String) async throws -> [String] {
        try await store.recordHistory(zone, key: key).map { String(decoding: $0.note, as: UTF8.self) }
    }

    @Test(arguments: StoreBackend.allCases)
    func aRecordKeepsItsLatestVersionsNewestFirst(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        let sequences = try await save(store, zone, "a", notes: ["a1", "a2"])
        try await save(store, zone, "b", notes: ["b1"])
        let stored = try await store.recordHistory(zone, key: "a")
        #expect(stored.map(\.sequence) == sequences.reversed(), "each note under the sequence its save wrote")
        #expect(try await history(store, zone, "a") == ["a2", "a1"])
        #expect(try await history(store, zone, "b") == ["b1"])
        #expect(try await history(store, zone, "missing") == [])
        let elsewhere = try await makeZone(store, "Other")
        #expect(try await history(store, elsewhere, "a") == [], "another account's zone of the same name")

        // A transaction that throws leaves no note.
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            _ = try await store.transactRecords(zone, creating: false) { transaction in
                try transaction.put("a", payload: Data("a3".utf8), size: 2)
                try transaction.noteVersion("a", note: Data("a3".utf8), first: false)
                throw Refused()
            }
        }
        #expect(try await history(store, zone, "a") == ["a2", "a1"])

        // Two versions of one record in one transaction are two notes.
        _ = try await store.transactRecords(zone, creating: false) { transaction in
            for note in ["a3", "a4"] {
                try transaction.put("a", payload: Data(note.utf8), size: 2)
                try transaction.noteVersion("a", note: Data(note.utf8), first: false)
            }
        }
        #expect(try await history(store, zone, "a") == ["a4", "a3", "a2", "a1"])
    }

    @Test(arguments: StoreBackend.allCases)
    func aHistoryIsBoundedAndForgottenWithItsRecord(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        let kept = RecordVersionNote.kept
        let notes = (1...kept + 7).map { "v\($0)" }
        try await save(store, zone, "busy", notes: Array(notes.prefix(kept + 2)))
        // The rest in one transaction: trimmed at its commit too.
        _ = try await store.transactRecords(zone, creating: false) { transaction in
            for note in notes.dropFirst(kept + 2) {
                try transaction.put("busy", payload: Data(note.utf8), size: 2)
                try transaction.noteVersion("busy", note: Data(note.utf8), first: false)
            }
        }
        #expect(try await history(store, zone, "busy") == Array(notes.suffix(kept).reversed()))
        // A version wrongly said to be a record's first is not trimmed for; the next version trims all.
        _ = try await store.transactRecords(zone, creating: false) { transaction in
            try transaction.put("busy", payload: Data("x".utf8), size: 1)
            try transaction.noteVersion("busy", note: Data("x".utf8), first: true)
        }
        #expect(try await history(store, zone, "busy").count == kept + 1)
        try await save(store, zone, "busy", notes: ["y"])
        #expect(try await history(store, zone, "busy") == ["y", "x"] + Array(notes.suffix(kept - 2).reversed()))

        try await save(store, zone, "kept", notes: ["k1"])
        // Deleting forgets the history; a record made again under the name starts a new one, even in the
        // transaction that deleted it.
        _ = try await store.transactRecords(zone, creating: false) { transaction in
            try transaction.put("busy", payload: nil, size: 0)
            try transaction.forgetHistory("busy")
            try transaction.put("busy", payload: Data("again".utf8), size: 5)
            try transaction.noteVersion("busy", note: Data("again".utf8), first: true)
        }
        #expect(try await history(store, zone, "busy") == ["again"])
        _ = try await store.transactRecords(zone, creating: false) { transaction in
            try transaction.put("busy", payload: nil, size: 0)
            try transaction.forgetHistory("busy")
        }
        #expect(try await history(store, zone, "busy") == [])
        #expect(try await history(store, zone, "kept") == ["k1"])
    }

    @Test(arguments: StoreBackend.allCases)
    func aDeletedZonesHistoriesArePurged(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await makeZone(store)
        for key in (0..<40).map({ "r\($0)" }) { try await save(store, zone, key, notes: ["1", "2"]) }
        try await store.deleteZone(zone)
        #expect(try await history(store, zone, "r1") == [], "gone with the zone at once")
        // 40 entries and 80 notes; the entries' index rows: none were written.
        #expect(try await store.purgeDeletedZones() == 40 + 80)
        _ = try await store.createZone(zone)
        #expect(try await history(store, zone, "r1") == [], "a zone made again under the name starts empty")
    }
}
