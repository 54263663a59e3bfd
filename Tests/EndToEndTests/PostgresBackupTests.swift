import Foundation
import NimbusCore
import NimbusKit
import NimbusPostgres
import NimbusServer
import NimbusStore
import NimbusTesting
import NimbusTestingCore
import Testing

/// `nimbus backup` and `restore` of a deployment on PostgreSQL with its blobs in a bucket, as an operator
/// runs them: a backup taken under writes, restored into a new database and bucket, serves every write
/// acknowledged before it; a damaged backup is refused before anything is written.
@Suite(.cleansUp) struct PostgresBackupTests {
    @Test func aBackupUnderWritesRestoresIntoANewDatabaseAndBucket() async throws {
        let objects = try await TemporarySeaweedFS.start()
        let live = objects.bucket(prefix: "live/")
        try await S3Client(live).createBucket()
        let url = try await TemporaryPostgres.shared().database()
        let server = try await TestServer.start {
            $0.storage = .postgres(try! PostgresLocation(url: url), connections: 4)
            $0.blobs = .s3(live)
        }
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let database = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Notes")).zoneID
        let image = TestResources.temporaryDirectory(prefix: "photo")
        var generator = SeededGenerator(seed: 13)
        let bytes = generator.bytes(300_000)
        try bytes.write(to: image)
        var photo = Record(recordType: "Photos", zoneID: zone)
        photo["image"] = Asset(fileURL: image)
        photo = try await database.save(photo)
        let tokenBefore = try await database.recordZoneChanges(inZoneWith: zone, since: nil).changeToken

        let writer = BackupRestoreTests.Writer(database, zone: zone)
        #expect(await writer.waitFor(10))
        let acknowledgedBeforeBackup = writer.saved.withLock { $0 }
        let destination = TestResources.temporaryDirectory(prefix: "backups").path
        let bucketOptions = [
            "--blobs-endpoint", objects.endpoint.absoluteString, "--blobs-access-key-id", objects.accessKeyID,
            "--blobs-secret-access-key", objects.secretAccessKey,
        ]
        let backup = try await DataCommandLineTests.nimbus(
            [
                "backup", "--database", url, "--data", server.dataDirectory.path, "--blobs", "s3://nimbus/live", "--to",
                destination,
            ]
                + bucketOptions)
        #expect(backup.status == 0, "\(backup.stdout)\(backup.stderr)")
        #expect(backup.stdout.contains("and 1 blobs (300000 bytes)"), "\(backup.stdout)")
        let countAfterBackup = writer.count
        #expect(await writer.waitFor(countAfterBackup + 10), "writes go on after the backup")
        try await writer.stop()
        // After the backup: the photo is deleted (its file becomes collectable) and a zone is made.
        _ = try await database.modifyRecords(saving: [], deleting: [photo.recordID])
        _ = try await database.save(RecordZone(zoneName: "Lost"))
        let tokenAfter = try await database.recordZoneChanges(inZoneWith: zone, since: nil).changeToken
        await server.stop()

        // Into a new database and a new prefix of the bucket, with a node's data directory of its own.
        let restoredURL = try await TemporaryPostgres.shared().database()
        let restoredData = TestResources.temporaryDirectory(prefix: "restored")
        let restoreArguments =
            ["restore", "--from", destination, "--database", restoredURL, "--data", restoredData.path]
            + ["--blobs", "s3://nimbus/restored"] + bucketOptions
        let restore = try await DataCommandLineTests.nimbus(restoreArguments)
        #expect(restore.status == 0, "\(restore.stdout)\(restore.stderr)")
        let again = try await DataCommandLineTests.nimbus(restoreArguments)
        #expect(again.status == 1 && again.stderr.contains("RESTORE_TARGET_NOT_EMPTY"), "\(again.stderr)")
        // The restored node signs download URLs with the deployment's key.
        #expect(
            try Data(contentsOf: EmbeddedDataDirectory(restoredData).urlSigningKey)
                == Data(contentsOf: EmbeddedDataDirectory(server.dataDirectory).urlSigningKey))

        let restored = try await TestServer.start(dataDirectory: restoredData) {
            $0.storage = .postgres(try! PostgresLocation(url: restoredURL), connections: 4)
            $0.blobs = .s3(objects.bucket(prefix: "restored/"))
        }
        var device = session
        device.server = restored.url
        let resumed = CloudContainer(identifier: app.container, session: device, apiToken: app.apiToken).privateCloudDatabase
        let found = try await resumed.records(for: acknowledgedBeforeBackup.map(\.recordID))
        for record in acknowledgedBeforeBackup {
            let restoredRecord = try #require(try found[record.recordID]?.get(), "\(record.recordID.recordName) is lost")
            #expect(restoredRecord.recordChangeTag == record.recordChangeTag)
        }
        let restoredPhoto = try await resumed.record(for: photo.recordID)
        let asset = try #require(restoredPhoto["image"] as Asset?)
        #expect(try await resumed.download(asset) == bytes, "the file comes back from the new bucket")
        #expect(try await resumed.allRecordZones().map(\.zoneID.zoneName).contains("Lost") == false)
        // A device resumes from a token the backup holds; one from after it is expired, so it fetches again.
        _ = try await resumed.recordZoneChanges(inZoneWith: zone, since: tokenBefore)
        await #expect {
            _ = try await resumed.recordZoneChanges(inZoneWith: zone, since: tokenAfter)
        } throws: { ($0 as? NimbusError)?.code == .changeTokenExpired }
    }

    /// A blob whose bytes differ from the manifest stops the restore before the database is touched, and
    /// nothing of it is kept: once the backup is whole again, it restores into the same database.
    @Test func aDamagedBackupIsRefusedAndLeavesTheDatabaseEmpty() async throws {
        let url = try await TemporaryPostgres.shared().database()
        let server = try await TestServer.start { $0.storage = .postgres(try! PostgresLocation(url: url), connections: 4) }
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let database = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        let image = TestResources.temporaryDirectory(prefix: "photo")
        try Data(repeating: 7, count: 50_000).write(to: image)
        var photo = Record(recordType: "Photos")
        photo["image"] = Asset(fileURL: image)
        photo = try await database.save(photo)
        let destination = TestResources.temporaryDirectory(prefix: "backups")
        let backup = try await DataCommandLineTests.nimbus(
            ["backup", "--database", url, "--data", server.dataDirectory.path, "--to", destination.path])
        #expect(backup.status == 0, "\(backup.stdout)\(backup.stderr)")
        await server.stop()

        let blobs = destination.appendingPathComponent("blobs")
        let blob = try #require(try FileManager.default.contentsOfDirectory(atPath: blobs.path).first)
        let whole = try Data(contentsOf: blobs.appendingPathComponent(blob))
        var damaged = whole
        damaged[1000] ^= 0xFF
        try damaged.write(to: blobs.appendingPathComponent(blob))
        let target = try await TemporaryPostgres.shared().database()
        let restoredData = TestResources.temporaryDirectory(prefix: "restored")
        let arguments = ["restore", "--from", destination.path, "--database", target, "--data", restoredData.path]
        let refused = try await DataCommandLineTests.nimbus(arguments)
        #expect(refused.status == 1 && refused.stderr.contains("BACKUP_DAMAGED"), "\(refused.stdout)\(refused.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: EmbeddedDataDirectory(restoredData).blobs.appendingPathComponent(blob).path))

        try whole.write(to: blobs.appendingPathComponent(blob))
        let restore = try await DataCommandLineTests.nimbus(arguments)
        #expect(restore.status == 0, "\(restore.stdout)\(restore.stderr)")
        // An embedded restore of this backup is refused with what to do instead.
        let embedded = try await DataCommandLineTests.nimbus([
            "restore", "--from", destination.path, "--data", TestResources.temporaryDirectory(prefix: "embedded").path,
        ])
        #expect(embedded.status == 1 && embedded.stderr.contains("BACKUP_WRONG_KIND"), "\(embedded.stderr)")
    }
}
