import Foundation
import GRDB
import Logging
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusStore
import NimbusTesting
import Synchronization
import Testing

/// Backups, restores and checks of a server's data directory: what each refuses, and what each finds.
@Suite(.cleansUp) struct BackupTests {
    /// A server holding a document (a chunk blob) and a record with an asset (an asset blob).
    static func populated() async throws -> DocumentRouteTests.Fixture {
        let fixture = try await DocumentRouteTests.Fixture.make()
        _ = try await fixture.save("item-1", "notes.txt", "the chapter about backups")
        let database = CloudContainer(identifier: fixture.app.container, session: fixture.ann, apiToken: fixture.app.apiToken)
            .privateCloudDatabase
        let image = TestServer.temporaryDirectory()
        try Data(repeating: 42, count: 10_000).write(to: image)
        var photo = Record(recordType: "Photos")
        photo["image"] = Asset(fileURL: image)
        _ = try await database.save(photo)
        return fixture
    }

    enum Damage: String, CaseIterable {
        case manifestMissing, manifestGarbled, databaseByteFlipped, blobMissing, blobByteFlipped, keyMissing
    }

    @Test(arguments: Damage.allCases) func restoreRefusesAnIncompleteOrDamagedBackup(_ damage: Damage) async throws {
        let fixture = try await Self.populated()
        let destination = TestServer.temporaryDirectory()
        let manifest = try await EmbeddedBackup.create(of: EmbeddedDataDirectory(fixture.server.dataDirectory), to: destination)
        let folder = destination.appendingPathComponent(manifest.id)
        let blob = destination.appendingPathComponent("blobs").appendingPathComponent(try #require(manifest.blobs.first).name)
        switch damage {
        case .manifestMissing: try FileManager.default.removeItem(at: folder.appendingPathComponent("manifest.json"))
        case .manifestGarbled: try Data("{\"format\":".utf8).write(to: folder.appendingPathComponent("manifest.json"))
        case .databaseByteFlipped: try Self.flipByte(in: folder.appendingPathComponent("nimbus.sqlite"))
        case .blobMissing: try FileManager.default.removeItem(at: blob)
        case .blobByteFlipped: try Self.flipByte(in: blob)
        case .keyMissing: try FileManager.default.removeItem(at: folder.appendingPathComponent("url-signing.key"))
        }
        let target = TestServer.temporaryDirectory()
        let error = try await #require(throws: BackupError.self) {
            try await EmbeddedRestore.restore(from: destination, into: EmbeddedDataDirectory(target))
        }
        let expected: BackupError.Code =
            switch damage {
            case .manifestMissing, .blobMissing, .keyMissing: .incomplete
            case .manifestGarbled, .databaseByteFlipped, .blobByteFlipped: .damaged
            }
        #expect(error.code == expected, "\(error)")
        #expect(!FileManager.default.fileExists(atPath: target.path), "a refused restore leaves nothing behind")
        let siblings = try FileManager.default.contentsOfDirectory(atPath: target.deletingLastPathComponent().path)
        #expect(!siblings.contains { $0.hasPrefix(".restoring-\(target.lastPathComponent)") })
    }

    @Test func restoreRefusesATargetThatHoldsData() async throws {
        let fixture = try await Self.populated()
        let destination = TestServer.temporaryDirectory()
        try await EmbeddedBackup.create(of: EmbeddedDataDirectory(fixture.server.dataDirectory), to: destination)
        let error = try await #require(throws: BackupError.self) {
            try await EmbeddedRestore.restore(from: destination, into: EmbeddedDataDirectory(fixture.server.dataDirectory))
        }
        #expect(error.code == .targetNotEmpty)
        await #expect(throws: BackupError(.notFound, "there is no backup in \(fixture.server.dataDirectory.path)")) {
            try await EmbeddedRestore.restore(
                from: fixture.server.dataDirectory, into: EmbeddedDataDirectory(TestServer.temporaryDirectory()))
        }
    }

    @Test func aSecondBackupCopiesOnlyNewBlobsAndKeepRotates() async throws {
        let fixture = try await Self.populated()
        let data = EmbeddedDataDirectory(fixture.server.dataDirectory)
        let destination = TestServer.temporaryDirectory()
        let first = try await EmbeddedBackup.create(of: data, to: destination)
        #expect(first.blobs.count == 2)
        let blobs = destination.appendingPathComponent("blobs")
        let inodes = try Dictionary(
            uniqueKeysWithValues: first.blobs.map { ($0.name, try Self.inode(blobs.appendingPathComponent($0.name))) })

        _ = try await fixture.save("item-2", "more.txt", "a second chapter")
        let second = try await EmbeddedBackup.create(of: data, to: destination, now: Date().addingTimeInterval(1))
        #expect(second.blobs.count == 3)
        for (name, inode) in inodes {
            #expect(try Self.inode(blobs.appendingPathComponent(name)) == inode, "a blob the destination has is not copied again")
        }
        #expect(second.counts.entries > first.counts.entries)

        // The collector deletes a blob (as it does once no version names it); keeping one backup then deletes
        // the older backups and that blob, which only they named.
        let collected = DocumentRouteTests.Fixture.hash(Data("a second chapter".utf8))
        try FileManager.default.removeItem(at: data.blobs.appendingPathComponent(collected))
        let third = try await EmbeddedBackup.create(of: data, to: destination, keep: 1, now: Date().addingTimeInterval(2))
        #expect(try BackupDestination(destination).list().map(\.id) == [third.id])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: blobs.path)) == Set(third.blobs.map(\.name)))
        #expect(third.blobs.count == 2 && !third.blobs.contains { $0.name == collected })
    }

    /// A sweep while a backup copies would delete blobs the backup's database names: it waits its turn.
    @Test func theBlobSweepSkipsItsRoundWhileABackupHoldsTheLock() async throws {
        let directory = TestServer.temporaryDirectory()
        let blobs = try LocalBlobStore(directory: directory)
        let writer = try await blobs.makeWriter(maxBytes: 1 << 20)
        try await writer.write(Data("unreferenced".utf8))
        _ = try await writer.finish()
        // Close-on-exec, as the server's own lock: a server another test starts would otherwise hold the lock
        // for its whole life (seen in a loaded full run: every later sweep skipped).
        let lock = open(LocalBlobStore.sweepLock(for: directory).path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(lock >= 0 && flock(lock, LOCK_SH) == 0)
        #expect(try await blobs.sweep(keeping: [], writtenBefore: Date().addingTimeInterval(60)) == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == 1)
        close(lock)
        // A program another test starts still holds a copy of the descriptor from its fork until its exec, and a
        // sweep skips its round rather than wait: the sweeps that follow collect.
        #expect(await eventually { (try? await blobs.sweep(keeping: [], writtenBefore: Date().addingTimeInterval(60))) == 1 })
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "the directory holds blobs only")
    }

    /// The other side: a backup waits while a sweep is under way.
    @Test func aBackupWaitsForASweepUnderWay() async throws {
        let fixture = try await Self.populated()
        let data = EmbeddedDataDirectory(fixture.server.dataDirectory)
        let sweep = open(LocalBlobStore.sweepLock(for: data.blobs).path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(sweep >= 0 && flock(sweep, LOCK_EX) == 0)
        let destination = TestServer.temporaryDirectory()
        // Blocked on the lock, on a thread of its own: a cooperative thread blocked there could be the one
        // this test needs to release it.
        let backup = Task { try await EmbeddedBackup.create(of: data, to: destination) }
        // A negative check, not synchronisation: 300 ms is long enough for a backup of this size to finish.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try BackupDestination(destination).list().isEmpty, "no backup is written while the sweep holds the lock")
        close(sweep)
        #expect(try await backup.value.blobs.count == 2)
    }

    /// A restore waits while a backup into its destination (which may rotate away the backup being restored)
    /// holds the destination's lock.
    @Test func aRestoreWaitsForABackupIntoItsDestination() async throws {
        let fixture = try await Self.populated()
        let destination = TestServer.temporaryDirectory()
        try await EmbeddedBackup.create(of: EmbeddedDataDirectory(fixture.server.dataDirectory), to: destination)
        let backup = open(destination.appendingPathComponent(".lock").path, O_RDWR, 0o600)
        #expect(backup >= 0 && flock(backup, LOCK_EX) == 0)
        let target = TestServer.temporaryDirectory()
        let restore = Task {
            try await EmbeddedRestore.restore(from: destination, into: EmbeddedDataDirectory(target))
        }
        // A negative check, not synchronisation: 300 ms is long enough for a restore of this size to finish.
        try await Task.sleep(for: .milliseconds(300))
        #expect(!FileManager.default.fileExists(atPath: target.path), "nothing is restored while a backup holds the lock")
        close(backup)
        #expect(try await restore.value.blobs.count == 2)
    }

    enum Corruption: String, CaseIterable {
        case chunkBytes, assetBytes, blobDeleted, zoneCounter, zoneSequence, orphanIndexRow, recordIndexRowDeleted
        case documentIndexRowChanged
    }

    @Test(arguments: Corruption.allCases) func checkFindsWhatIsWrongAndChangesNothing(_ corruption: Corruption) async throws {
        let fixture = try await Self.populated()
        let directory = fixture.server.dataDirectory
        let data = EmbeddedDataDirectory(directory)
        let healthy = try await DataCheck.run(dataDirectory: directory)
        #expect(healthy.isHealthy, "\(healthy.problems)")
        #expect(healthy.checked.contains { $0.hasPrefix("blobs: 2 named") }, "\(healthy.checked)")
        #expect(healthy.checked.contains { $0.hasPrefix("index rows of 3 entries") }, "\(healthy.checked)")
        await fixture.server.stop()

        let chunk = data.blobs.appendingPathComponent(DocumentRouteTests.Fixture.hash(Data("the chapter about backups".utf8)))
        let asset = try #require(
            try FileManager.default.contentsOfDirectory(atPath: data.blobs.path).first {
                LocalBlobStore.isBlobName($0) && $0 != chunk.lastPathComponent
            })
        let queue = try DatabaseQueue(path: data.database.path)
        switch corruption {
        case .chunkBytes: try Self.flipByte(in: chunk)
        case .assetBytes: try Self.flipByte(in: data.blobs.appendingPathComponent(asset))
        case .blobDeleted: try FileManager.default.removeItem(at: chunk)
        case .zoneCounter: try await queue.write { try $0.execute(sql: "UPDATE zones SET live_entries = live_entries + 1") }
        case .zoneSequence: try await queue.write { try $0.execute(sql: "UPDATE zones SET sequence = 0") }
        case .recordIndexRowDeleted:
            try await queue.write { db in
                try db.execute(
                    sql:
                        "DELETE FROM entry_index WHERE field IN (SELECT id FROM index_fields WHERE kind = 'Photos' AND field = '___createdBy')"
                )
            }
        case .documentIndexRowChanged:
            try await queue.write { db in
                try db.execute(
                    sql:
                        "UPDATE entry_index SET value = '/elsewhere' WHERE field IN (SELECT id FROM index_fields WHERE kind = 'item' AND field = 'place')"
                )
            }
        case .orphanIndexRow:
            try await queue.write { db in
                try db.execute(
                    sql:
                        "INSERT INTO entry_index (zone_id, sequence, field, position, value) SELECT id, 999999, 1, 0, 'x' FROM zones LIMIT 1"
                )
            }
        }
        try queue.close()
        let before = try Data(contentsOf: data.database)
        let report = try await DataCheck.run(dataDirectory: directory)
        #expect(!report.isHealthy)
        #expect(report.problems.count >= 1, "\(corruption)")
        let expected =
            switch corruption {
            case .chunkBytes: "holds bytes whose SHA-256"
            case .assetBytes: "checksum is not the record's"
            case .blobDeleted: "missing"
            case .zoneCounter: "counts"
            case .zoneSequence: "past the zone's"
            case .orphanIndexRow: "which no live entry has"
            case .recordIndexRowDeleted, .documentIndexRowChanged: "index rows differ from its payload's"
            }
        #expect(report.problems.contains { $0.contains(expected) }, "\(report.problems)")
        #expect(try Data(contentsOf: data.database) == before, "the check is read-only")
    }

    @Test func aMigrationThatRewritesDataIsPrecededByABackup() async throws {
        let directory = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let data = EmbeddedDataDirectory(directory)
        try SQLiteStore.simulateOlderVersion(path: data.database.path, migratedUpTo: "2026-11-23-repair-non-finite-record-values")
        let log = LogCapture()
        var configuration = ServerConfiguration()
        configuration.dataDirectory = directory
        _ = try await NimbusServer(configuration: configuration, logger: log.logger)
        let backups = try BackupDestination(data.migrationBackups).list()
        let backup = try #require(backups.first)
        #expect(backups.count == 1)
        #expect(backup.migrations.last == "2026-11-23-repair-non-finite-record-values", "the backup is of the data before")
        let notice = try #require(log.messages.first { $0.hasPrefix("backed up the data before a migration") })
        #expect(notice.contains(data.migrationBackups.appendingPathComponent(backup.id).path))

        // A migration that only adds tables and columns goes ahead without one.
        let newer = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(at: newer, withIntermediateDirectories: true)
        try SQLiteStore.simulateOlderVersion(
            path: EmbeddedDataDirectory(newer).database.path, migratedUpTo: "2026-11-24-container-package-extensions")
        configuration.dataDirectory = newer
        _ = try await NimbusServer(configuration: configuration)
        #expect(try BackupDestination(EmbeddedDataDirectory(newer).migrationBackups).list().isEmpty)
    }

    @Test func aServerBacksItselfUpOnScheduleKeepingTheNewest() async throws {
        let destination = TestServer.temporaryDirectory()
        let server = try await TestServer.start {
            $0.backupDirectory = destination
            $0.backupInterval = .milliseconds(100)
            $0.backupsKept = 2
        }
        _ = try await server.seedApp()
        let seen = Mutex(Set<String>())
        let rotated = await eventually(timeout: .seconds(30)) {
            let ids = (try? BackupDestination(destination).list().map(\.id)) ?? []
            let count = seen.withLock {
                $0.formUnion(ids)
                return $0.count
            }
            return count >= 4 && ids.count == 2
        }
        #expect(rotated, "backups are taken every interval and only the newest two kept (seen \(seen.withLock { $0.count }))")
    }

    static func flipByte(in file: URL) throws {
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: file)
    }

    static func inode(_ file: URL) throws -> UInt64 {
        try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.systemFileNumber] as? UInt64)
    }
}
