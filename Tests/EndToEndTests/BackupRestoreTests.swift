import Foundation
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusStore
import NimbusTesting
import NimbusTestingCore
import Synchronization
import Testing

/// Backups of a server that takes writes meanwhile, restored into a new data directory and served again.
@Suite(.cleansUp) struct BackupRestoreTests {
    /// Saves records one after another until stopped, keeping each save the server acknowledged.
    final class Writer: Sendable {
        let saved = Mutex<[Record]>([])
        private let stopping = Mutex(false)
        private let task = Mutex<Task<Void, any Error>?>(nil)

        init(_ database: CloudDatabase, zone: RecordZoneID) {
            let task = Task { [self] in
                var number = 0
                while !self.stopping.withLock({ $0 }) {
                    var note = Record(recordType: "Notes", recordID: RecordID(recordName: "note-\(number)", zoneID: zone))
                    note["number"] = number
                    let acknowledged = try await database.save(note)
                    self.saved.withLock { $0.append(acknowledged) }
                    number += 1
                }
            }
            self.task.withLock { $0 = task }
        }

        var count: Int { saved.withLock { $0.count } }

        func waitFor(_ count: Int) async -> Bool { await eventually(timeout: .seconds(30)) { self.count >= count } }

        func stop() async throws {
            stopping.withLock { $0 = true }
            try await task.withLock { $0 }!.value
        }
    }

    @Test func aBackupUnderWritesRestoresEveryAcknowledgedWriteAndExpiresLaterTokens() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let database = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Notes")).zoneID
        let image = TestResources.temporaryDirectory(prefix: "photo")
        var generator = SeededGenerator(seed: 7)
        let bytes = generator.bytes(300_000)
        try bytes.write(to: image)
        var photo = Record(recordType: "Photos", zoneID: zone)
        photo["image"] = Asset(fileURL: image)
        photo = try await database.save(photo)
        let tokenBefore = try await database.recordZoneChanges(inZoneWith: zone, since: nil).changeToken
        let databaseTokenBefore = try await database.databaseChanges(since: nil).changeToken

        let writer = Writer(database, zone: zone)
        #expect(await writer.waitFor(20))
        let acknowledgedBeforeBackup = writer.saved.withLock { $0 }
        let backups = TestResources.temporaryDirectory(prefix: "backups")
        let data = EmbeddedDataDirectory(server.dataDirectory)
        let manifest = try await EmbeddedBackup.create(of: data, to: backups)
        let countAfterBackup = writer.count
        #expect(await writer.waitFor(countAfterBackup + 20), "writes go on after the backup, on the same server")
        try await writer.stop()
        // A zone and a token from the history after the backup, which the restore loses.
        let lostZone = try await database.save(RecordZone(zoneName: "Lost")).zoneID
        _ = try await database.save(Record(recordType: "Notes", zoneID: lostZone))
        let tokenAfter = try await database.recordZoneChanges(inZoneWith: zone, since: nil).changeToken
        let databaseTokenAfter = try await database.databaseChanges(since: nil).changeToken
        await server.stop()
        #expect(manifest.counts.blobs == 1)

        let restoredDirectory = TestResources.temporaryDirectory(prefix: "restored")
        try await EmbeddedRestore.restore(from: backups, into: EmbeddedDataDirectory(restoredDirectory))
        let check = try await DataCheck.run(dataDirectory: restoredDirectory)
        #expect(check.isHealthy, "\(check.problems)")
        let indexed = check.checked.first { $0.hasPrefix("index rows of") }?.split(separator: " ").dropFirst(3).first
        #expect((indexed.flatMap { Int($0) } ?? 0) > acknowledgedBeforeBackup.count, "every record's rows: \(check.checked)")
        let restored = try await TestServer.start(dataDirectory: restoredDirectory)
        var device = session
        device.server = restored.url
        let resumed = CloudContainer(identifier: app.container, session: device, apiToken: app.apiToken).privateCloudDatabase

        // Every write acknowledged before the backup began is there, with its change tag.
        let found = try await resumed.records(for: acknowledgedBeforeBackup.map(\.recordID))
        for record in acknowledgedBeforeBackup {
            let restoredRecord = try #require(try found[record.recordID]?.get(), "\(record.recordID.recordName) is lost")
            #expect(restoredRecord.recordChangeTag == record.recordChangeTag)
            #expect(restoredRecord["number"] as Int64? == record["number"] as Int64?)
        }
        let restoredPhoto = try await resumed.record(for: photo.recordID)
        let asset = try #require(restoredPhoto["image"] as Asset?)
        #expect(try await resumed.download(asset) == bytes)

        // A device resumes from a token the backup holds and gets what came after it, up to the backup.
        let resumedChanges = try await resumed.recordZoneChanges(inZoneWith: zone, since: tokenBefore)
        let resumedNames = Set(resumedChanges.modifications.map(\.recordID.recordName))
        #expect(Set(acknowledgedBeforeBackup.map(\.recordID.recordName)).isSubset(of: resumedNames))
        #expect(!resumedNames.contains(photo.recordID.recordName), "changes before the token are not sent again")
        _ = try await resumed.databaseChanges(since: databaseTokenBefore)

        // A token from after the backup is expired: the device fetches everything again rather than miss
        // changes, even once the restored zone's sequence has passed the token's.
        try await expectExpired { _ = try await resumed.recordZoneChanges(inZoneWith: zone, since: tokenAfter) }
        try await expectExpired { _ = try await resumed.databaseChanges(since: databaseTokenAfter) }
        for number in 0..<(writer.count - countAfterBackup + 10) {
            var note = Record(recordType: "Notes", recordID: RecordID(recordName: "new-\(number)", zoneID: zone))
            note["number"] = number
            _ = try await resumed.save(note)
        }
        for number in 0..<3 { _ = try await resumed.save(RecordZone(zoneName: "Again-\(number)")) }
        try await expectExpired { _ = try await resumed.recordZoneChanges(inZoneWith: zone, since: tokenAfter) }
        try await expectExpired { _ = try await resumed.databaseChanges(since: databaseTokenAfter) }
        // A zone created after the restore may get the lost zone's internal id; the lost zone's token is not taken for it.
        _ = try await resumed.save(RecordZone(zoneName: "Newer"))
        let everything = try await resumed.recordZoneChanges(inZoneWith: zone, since: nil)
        #expect(everything.modifications.count > acknowledgedBeforeBackup.count)
        #expect(try await resumed.allRecordZones().map(\.zoneID.zoneName).contains("Lost") == false)
        _ = lostZone
    }

    /// Each restore starts a history of its own: restoring one backup twice, a token from the first
    /// restore's history is expired in the second's, even once its sequence has been passed there.
    @Test func restoringOneBackupTwiceKeepsTheirHistoriesApart() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let zone = try await Self.database(session, server, app).save(RecordZone(zoneName: "Notes")).zoneID
        _ = try await Self.database(session, server, app).save(Record(recordType: "Notes", zoneID: zone))
        let backups = TestResources.temporaryDirectory(prefix: "backups")
        let data = EmbeddedDataDirectory(server.dataDirectory)
        try await EmbeddedBackup.create(of: data, to: backups)
        await server.stop()

        var tokens: [ServerChangeToken] = []
        for round in 0..<2 {
            let directory = TestResources.temporaryDirectory(prefix: "restored-\(round)")
            try await EmbeddedRestore.restore(from: backups, into: EmbeddedDataDirectory(directory))
            let restored = try await TestServer.start(dataDirectory: directory)
            var device = session
            device.server = restored.url
            let database = Self.database(device, restored, app)
            // Writes in this history, each restore's a different number of them.
            for _ in 0..<(round == 0 ? 5 : 12) { _ = try await database.save(Record(recordType: "Notes", zoneID: zone)) }
            if round == 0 {
                tokens.append(try await database.recordZoneChanges(inZoneWith: zone, since: nil).changeToken)
            } else {
                try await expectExpired { _ = try await database.recordZoneChanges(inZoneWith: zone, since: tokens[0]) }
            }
            await restored.stop()
        }
    }

    static func database(_ session: NimbusSession, _ server: TestServer, _ app: TestServer.SeededApp) -> CloudDatabase {
        CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
    }

    @Test func aKeyValueStoreWritesAgainWhatTheRestoredServerLost() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let local = TestResources.temporaryDirectory(prefix: "phone")
        let phone = try server.keyValueStore(session, app: app, localDirectory: local)
        phone.set("in the backup", forKey: "kept")
        #expect(await phone.synchronize())
        let backups = TestResources.temporaryDirectory(prefix: "backups")
        let data = EmbeddedDataDirectory(server.dataDirectory)
        try await EmbeddedBackup.create(of: data, to: backups)
        phone.set("after the backup", forKey: "lost")
        #expect(await phone.synchronize())
        phone.close()
        await server.stop()

        let restoredDirectory = TestResources.temporaryDirectory(prefix: "restored")
        try await EmbeddedRestore.restore(from: backups, into: EmbeddedDataDirectory(restoredDirectory))
        let restored = try await TestServer.start(dataDirectory: restoredDirectory)
        // Another device writes in the restored history first, past the phone's position in the lost one.
        let tablet = try restored.keyValueStore(try await restored.signIn(email: "ann@example.com", device: "tablet"), app: app)
        for number in 0..<5 { tablet.set(Int64(number), forKey: "tablet-\(number)") }
        #expect(await tablet.synchronize())
        tablet.close()
        var resumed = session
        resumed.server = restored.url
        let phoneAgain = try restored.keyValueStore(resumed, app: app, localDirectory: local)
        #expect(await phoneAgain.synchronize())
        #expect(phoneAgain.string(forKey: "lost") == "after the backup")
        #expect(phoneAgain.longLong(forKey: "tablet-4") == 4, "the phone fetched the restored history from its start")
        let laptop = try restored.keyValueStore(try await restored.signIn(email: "ann@example.com", device: "laptop"), app: app)
        #expect(await laptop.synchronize())
        #expect(laptop.string(forKey: "kept") == "in the backup")
        #expect(laptop.string(forKey: "lost") == "after the backup", "the phone wrote again what the restore lost")
        phoneAgain.close()
        laptop.close()
    }

    private func expectExpired(_ body: () async throws -> Void) async throws {
        do {
            try await body()
            Issue.record("a token from the history the restore lost was accepted")
        } catch let error as NimbusError {
            #expect(error.code == .changeTokenExpired)
        }
    }
}
