import Foundation
import Synchronization
import NimbusCore
@testable import NimbusStore
import NimbusTestingCore
import Testing

/// The contract every Store backend keeps, written once and run per backend.
@Suite(.cleansUp) struct StoreConformanceTests {
    static let zoneAddress = ZoneAddress(service: .keyValue, name: "98Z3R5XU29.com.example.Cloudy")

    func makeAccount(_ store: any Store, email: String = "ann@example.com") async throws -> String {
        let id = Secrets.userRecordName()
        try await store.createAccount(
            AccountRecord(id: id, email: email, passwordHash: "x", isAdministrator: false, createdAt: Date()))
        return id
    }

    func mutation(_ key: String, _ text: String?) -> EntryMutation {
        EntryMutation(key: key, payload: text.map { Data($0.utf8) }, size: text?.utf8.count ?? 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func everyMutationAdvancesTheSequenceByOne(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = ZoneKey(accountID: try await makeAccount(store), address: Self.zoneAddress)
        #expect(try await store.zoneState(zone) == nil)
        let first = try await store.commit(zone, mutations: [mutation("a", "1"), mutation("b", "2")]) { _ in }
        #expect(first.sequence == 2)
        let second = try await store.commit(zone, mutations: [mutation("a", "3")]) { _ in }
        #expect(second.sequence == 3)
        #expect(second.id == first.id)
        #expect(second.liveEntries == 2 && second.liveBytes == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedCommitChangesNothing(_ backend: StoreBackend) async throws {
        struct Refused: Error {}
        let store = try await backend.makeStore()
        let zone = ZoneKey(accountID: try await makeAccount(store), address: Self.zoneAddress)
        _ = try await store.commit(zone, mutations: [mutation("a", "1")]) { _ in }
        await #expect(throws: Refused.self) {
            _ = try await store.commit(zone, mutations: [self.mutation("a", "changed"), self.mutation("b", "new")]) { _ in
                throw Refused()
            }
        }
        let (entries, state) = try await store.liveEntries(zone)
        #expect(state?.sequence == 1)
        #expect(entries.map(\.key) == ["a"])
        #expect(entries.first?.payload == Data("1".utf8))
    }

    @Test(arguments: StoreBackend.allCases)
    func concurrentCommitsGetDistinctSequencesAndARefusedOneFailsAlone(_ backend: StoreBackend) async throws {
        struct Refused: Error {}
        let store = try await backend.makeStore()
        let zone = ZoneKey(accountID: try await makeAccount(store), address: Self.zoneAddress)
        let outcomes = await withTaskGroup(of: (Int, ZoneState?).self) { group in
            for index in 0..<64 {
                group.addTask {
                    let state = try? await store.commit(zone, mutations: [self.mutation("k\(index)", "v")]) { _ in
                        if index == 17 { throw Refused() }
                    }
                    return (index, state)
                }
            }
            return await group.reduce(into: [(Int, ZoneState?)]()) { $0.append($1) }
        }
        #expect(outcomes.count == 64)
        #expect(outcomes.filter { $0.1 == nil }.map(\.0) == [17])
        let sequences = outcomes.compactMap { $0.1?.sequence }
        #expect(Set(sequences).count == 63)
        let (entries, state) = try await store.liveEntries(zone)
        #expect(entries.count == 63 && !entries.contains { $0.key == "k17" })
        #expect(state?.sequence == 63 && state?.liveEntries == 63)
        #expect(Set(entries.map(\.sequence)) == Set(1...63))
    }

    @Test(arguments: StoreBackend.allCases)
    func checksSeeTheTotalsAfterTheBatch(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = ZoneKey(accountID: try await makeAccount(store), address: Self.zoneAddress)
        _ = try await store.commit(zone, mutations: [mutation("a", "12345"), mutation("b", "1")]) { _ in }
        // A backend may run the check more than once (`ZoneStore.transact`): the last run is the one committed.
        let checked = Mutex<ZoneState?>(nil)
        let committed = try await store.commit(zone, mutations: [mutation("a", nil), mutation("c", "123")]) { state in
            checked.withLock { $0 = state }
        }
        #expect(checked.withLock { $0?.liveEntries } == 2)
        #expect(checked.withLock { $0?.liveBytes } == 4)
        #expect(committed.liveEntries == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func removalsLeaveTombstonesInTheChangeFeed(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = ZoneKey(accountID: try await makeAccount(store), address: Self.zoneAddress)
        _ = try await store.commit(zone, mutations: [mutation("a", "1"), mutation("b", "2")]) { _ in }
        _ = try await store.commit(zone, mutations: [mutation("a", nil)]) { _ in }
        let page = try await store.changes(zone, after: 2, limit: 10)
        #expect(page.entries == [Entry(key: "a", payload: nil, sequence: 3)])
        #expect(page.token == ChangeToken(zoneID: try #require(try await store.zoneState(zone)).id, sequence: 3))
        #expect(!page.moreComing)
        let elsewhere = ZoneKey(
            accountID: zone.accountID, address: ZoneAddress(service: .keyValue, name: "98Z3R5XU29.com.example.Other"))
        #expect(try await store.changes(elsewhere, after: 0, limit: 10).token == ChangeToken(zoneID: 0, sequence: 0))
        #expect(try await store.liveEntries(zone).entries.map(\.key) == ["b"])
    }

    @Test(arguments: StoreBackend.allCases)
    func changesArePagedAndCoalescedToTheLatestState(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = ZoneKey(accountID: try await makeAccount(store), address: Self.zoneAddress)
        for round in 0..<3 {
            _ = try await store.commit(zone, mutations: (0..<5).map { mutation("k\($0)", "\(round)") }) { _ in }
        }
        var sequence: Int64 = 0
        var seen = [Entry]()
        var pages = 0
        repeat {
            let page = try await store.changes(zone, after: sequence, limit: 2)
            seen += page.entries
            sequence = page.token.sequence
            pages += 1
            if !page.moreComing { break }
        } while true
        #expect(pages == 3)
        #expect(seen.count == 5)
        #expect(Set(seen.map(\.key)).count == 5)
        #expect(seen.allSatisfy { $0.payload == Data("2".utf8) })
        #expect(sequence == 15)
        #expect(seen.map(\.sequence) == seen.map(\.sequence).sorted())
    }

    @Test(arguments: StoreBackend.allCases)
    func zonesAreSeparatePerAccount(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let ann = ZoneKey(accountID: try await makeAccount(store, email: "ann@example.com"), address: Self.zoneAddress)
        let bob = ZoneKey(accountID: try await makeAccount(store, email: "bob@example.com"), address: Self.zoneAddress)
        _ = try await store.commit(ann, mutations: [mutation("secret", "ann's")]) { _ in }
        #expect(try await store.zoneState(bob) == nil)
        #expect(try await store.changes(bob, after: 0, limit: 100).entries.isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func emailsAreUniqueIgnoringCase(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        _ = try await makeAccount(store, email: "Ann@Example.com")
        await #expect(throws: StoreError.self) { _ = try await self.makeAccount(store, email: "ann@example.com") }
        #expect(try await store.account(email: "ANN@example.com") != nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func sessionsAreFoundByDigestAndRevocable(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let account = try await makeAccount(store)
        try await store.saveDevice(DeviceRecord(id: "d1", accountID: account, name: "phone", lastSeenAt: Date()))
        try await store.createSession(SessionRecord(tokenDigest: "digest", accountID: account, deviceID: "d1", expiresAt: Date()))
        #expect(try await store.credentials(sessionDigest: "digest", apiTokenDigest: nil).session?.revoked == false)
        try await store.revokeSession(tokenDigest: "digest")
        #expect(try await store.credentials(sessionDigest: "digest", apiTokenDigest: nil).session?.revoked == true)
        #expect(try await store.credentials(sessionDigest: "other", apiTokenDigest: nil).session == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func aDeviceCannotBeTakenOverByAnotherAccount(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let ann = try await makeAccount(store, email: "ann@example.com")
        let bob = try await makeAccount(store, email: "bob@example.com")
        try await store.saveDevice(DeviceRecord(id: "d1", accountID: ann, name: "phone", lastSeenAt: Date()))
        await #expect(throws: StoreError.self) {
            try await store.saveDevice(DeviceRecord(id: "d1", accountID: bob, name: "stolen", lastSeenAt: Date()))
        }
        #expect(try await store.device(id: "d1")?.accountID == ann)
    }

    @Test(arguments: StoreBackend.allCases)
    func entitlementsAndTokensNeedExistingAppsAndContainers(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "T"))
        await #expect(throws: StoreError.missing("team NOPE000000")) {
            try await store.createApp(
                App(bundleID: "com.x.y", teamID: "NOPE000000", keyValueStoreIdentifier: "a.b", containers: []))
        }
        try await store.createApp(
            App(bundleID: "com.x.y", teamID: "98Z3R5XU29", keyValueStoreIdentifier: "98Z3R5XU29.com.x.y", containers: []))
        try await store.createContainer(Container(identifier: "iCloud.com.x.y", teamID: "98Z3R5XU29"))
        await #expect(throws: StoreError.self) { try await store.entitle(bundleID: "com.x.y", container: "iCloud.com.missing") }
        try await store.entitle(bundleID: "com.x.y", container: "iCloud.com.x.y")
        #expect(try await store.app(bundleID: "com.x.y")?.containers == ["iCloud.com.x.y"])
        try await store.createAPIToken(
            APITokenRecord(
                id: "t1", tokenDigest: "token digest", containerID: "iCloud.com.x.y", bundleID: "com.x.y", name: "n"))
        let credentials = try await store.credentials(sessionDigest: nil, apiTokenDigest: "token digest")
        #expect(credentials.apiToken?.id == "t1")
        #expect(credentials.app?.containers == ["iCloud.com.x.y"])
        #expect(credentials.session == nil)
        try await store.revokeEntitlement(bundleID: "com.x.y", container: "iCloud.com.x.y")
        #expect(try await store.app(bundleID: "com.x.y")?.containers == [])
        await #expect(throws: StoreError.self) { try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "again")) }
    }

    @Test(arguments: StoreBackend.allCases)
    func watermarksNeverMoveBackwards(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let account = try await makeAccount(store)
        try await store.saveDevice(DeviceRecord(id: "d1", accountID: account, name: "phone", lastSeenAt: Date()))
        let zone = ZoneKey(accountID: account, address: Self.zoneAddress)
        _ = try await store.commit(zone, mutations: (0..<5).map { mutation("k\($0)", "v") }) { _ in }
        func mark(_ sequence: Int64, in zone: ZoneKey = zone) -> DeviceWatermark {
            DeviceWatermark(deviceID: "d1", zone: zone, sequence: sequence)
        }
        try await store.recordWatermarks([mark(-7)])
        #expect(try await store.watermarks(deviceID: "d1").first?.applied == 0)
        try await store.recordWatermarks([mark(4)])
        try await store.recordWatermarks([mark(2)])
        #expect(try await store.watermarks(deviceID: "d1").first?.applied == 4)
        // A zone that does not exist does not keep the batch's other marks from being recorded.
        let missing = ZoneKey(accountID: account, address: ZoneAddress(service: .keyValue, name: "98Z3R5XU29.com.example.Gone"))
        try await store.recordWatermarks([mark(3, in: missing), mark(99)])
        let marks = try await store.watermarks(deviceID: "d1")
        #expect(marks.count == 1)
        #expect(marks.first?.applied == 5)
        #expect(marks.first?.current == 5)
    }
}

@Suite(.cleansUp) struct SQLiteMigrationTests {
    @Test func aDatabaseFromANewerNimbusIsRefused() throws {
        let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("nimbus.sqlite").path
        try SQLiteStore.simulateNewerVersion(path: path, migration: "2099-01-01-from-the-future")
        #expect(throws: StoreError.newerDatabase(unknownMigrations: ["2099-01-01-from-the-future"])) {
            _ = try SQLiteStore(path: path)
        }
    }

    @Test func theDatabaseRunsInWriteAheadLogMode() async throws {
        let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("nimbus.sqlite").path
        let store = try SQLiteStore(path: path)
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "T"))
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    /// A commit is acknowledged only once the write-ahead log is synced (GRDB turns the writer to
    /// NORMAL, which syncs only at checkpoints, so a power cut could lose acknowledged writes).
    @Test func everyCommitIsSyncedToDisk() throws {
        let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try SQLiteStore(path: directory.appendingPathComponent("nimbus.sqlite").path)
        let full = 2
        #expect(try store.pool.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == full)
    }

    /// The write-ahead log is copied into the database beside the writer once it holds 10,000 pages, and
    /// then reused from its start, so it does not grow with every write: even under writes that never
    /// pause, it stops growing by 40,000 pages (when the writer finishes the copy itself).
    @Test func theLogIsCheckpointedAndReused() async throws {
        let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("nimbus.sqlite").path
        let store = try SQLiteStore(path: path)
        let zone = ZoneKey(
            accountID: try await StoreConformanceTests().makeAccount(store), address: StoreConformanceTests.zoneAddress)
        let pageBytes = 4096
        let fileBytes: @Sendable (String) throws -> Int = {
            try FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int ?? 0
        }
        // Rounds of 11,000 pages of new entries (a 60 KB payload fills 15 overflow pages).
        let payload = Data(count: 60_000)
        func writePages(_ round: Int) async throws {
            for batch in 0..<74 {
                let mutations = (0..<10).map {
                    EntryMutation(key: "r\(round)-\(batch)-\($0)", payload: payload, size: 100)
                }
                _ = try await store.commit(zone, mutations: mutations) { _ in }
            }
        }
        try await writePages(0)
        #expect(
            try await eventually { try fileBytes(path) >= 8_000 * pageBytes },
            "the log's pages reach the database file")
        for round in 1...6 { try await writePages(round) }
        #expect(
            try fileBytes(path + "-wal") < (40_000 + 12_000) * pageBytes,
            "the log restarted, instead of holding all 77,000 pages written")
    }

    @Test func reopeningKeepsData() async throws {
        let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("nimbus.sqlite").path
        try await SQLiteStore(path: path).createTeam(Team(teamID: "98Z3R5XU29", name: "T"))
        #expect(try await SQLiteStore(path: path).teams().map(\.teamID) == ["98Z3R5XU29"])
    }
}
