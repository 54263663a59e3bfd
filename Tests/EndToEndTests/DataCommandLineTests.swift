import Foundation
import NimbusKit
import NimbusServer
import NimbusStore
import NimbusTesting
import Testing

/// `nimbus backup`, `nimbus restore` and `nimbus check` as an operator runs them, beside a running server.
@Suite(.cleansUp) struct DataCommandLineTests {
    static func nimbus(_ arguments: [String]) async throws -> ChildProcess.Output {
        try await ChildProcess(
            executable: try CommandLineTests.executable, arguments: arguments,
            environment: CommandLineTests.environment(server: nil)
        ).run()
    }

    @Test func anOperatorBacksUpChecksAndRestores() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let database = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        var note = Record(recordType: "Notes")
        note["title"] = "kept"
        let photo = TestServer.temporaryDirectory()
        try Data(repeating: 9, count: 4096).write(to: photo)
        note["photo"] = Asset(fileURL: photo)
        note = try await database.save(note)
        let data = server.dataDirectory.path
        let destination = TestServer.temporaryDirectory().path

        let backup = try await Self.nimbus(["backup", "--data", data, "--to", destination])
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.contains("Backed up") && backup.stdout.contains(destination), "\(backup.stdout)")
        let check = try await Self.nimbus(["check", "--data", data])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("ok: \(data) is consistent"))

        // A damaged backup is refused, and nothing is left where the data would have gone.
        let id = try #require(try BackupDestination(URL(fileURLWithPath: destination)).list().last).id
        let copy = URL(fileURLWithPath: destination).appendingPathComponent(id).appendingPathComponent("nimbus.sqlite")
        let original = try Data(contentsOf: copy)
        var damaged = original
        damaged[damaged.count - 10] ^= 0xFF
        try damaged.write(to: copy)
        let target = TestServer.temporaryDirectory().path
        let refused = try await Self.nimbus(["restore", "--from", destination, "--data", target])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("BACKUP_DAMAGED"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target))
        try original.write(to: copy)

        let restore = try await Self.nimbus(["restore", "--from", destination, "--data", target])
        #expect(restore.status == 0, "\(restore.stderr)")
        let restoredCheck = try await Self.nimbus(["check", "--data", target])
        #expect(restoredCheck.status == 0, "\(restoredCheck.stdout)")
        let again = try await Self.nimbus(["restore", "--from", destination, "--data", target])
        #expect(again.status == 1 && again.stderr.contains("RESTORE_TARGET_NOT_EMPTY"), "\(again.stderr)")

        // The restored directory serves the record.
        await server.stop()
        let restored = try await TestServer.start(dataDirectory: URL(fileURLWithPath: target))
        var device = session
        device.server = restored.url
        let resumed = CloudContainer(identifier: app.container, session: device, apiToken: app.apiToken).privateCloudDatabase
        #expect(try await resumed.record(for: note.recordID).recordChangeTag == note.recordChangeTag)

        // Damage in the data directory makes check fail, saying what: an asset's bytes changed on disk.
        await restored.stop()
        let blobs = URL(fileURLWithPath: target).appendingPathComponent("blobs")
        let blob = try #require(try FileManager.default.contentsOfDirectory(atPath: blobs.path).first { $0.count == 64 })
        try Data("not the photo".utf8).write(to: blobs.appendingPathComponent(blob))
        let failing = try await Self.nimbus(["check", "--data", target])
        #expect(failing.status == 1, "\(failing.stdout)\(failing.stderr)")
        #expect(failing.stdout.contains("PROBLEM asset \(blob)"), "\(failing.stdout)")
    }

    @Test func badArgumentsGetClearErrors() async throws {
        let missing = TestServer.temporaryDirectory().path
        let noData = try await Self.nimbus(["backup", "--data", missing, "--to", TestServer.temporaryDirectory().path])
        #expect(noData.status == 1 && noData.stderr.contains("BACKUP_NOT_FOUND"), "\(noData.stderr)")
        let keep = try await Self.nimbus(["backup", "--data", missing, "--to", missing, "--keep", "0"])
        #expect(keep.status != 0 && keep.stderr.contains("--keep must be at least 1"), "\(keep.stderr)")
        let nothing = try await Self.nimbus(["restore", "--from", missing, "--data", TestServer.temporaryDirectory().path])
        #expect(nothing.status == 1 && nothing.stderr.contains("BACKUP_NOT_FOUND"), "\(nothing.stderr)")
        let checkNothing = try await Self.nimbus(["check", "--data", missing])
        #expect(checkNothing.status == 1 && checkNothing.stderr.contains("BACKUP_NOT_FOUND"), "\(checkNothing.stderr)")
        let every = try await Self.nimbus(["serve", "--data", missing, "--backup-every", "6x", "--backup-to", missing])
        #expect(every.status != 0 && every.stderr.contains("--backup-every takes"), "\(every.stderr)")
        let nowhere = try await Self.nimbus(["serve", "--data", missing, "--backup-every", "6h"])
        #expect(nowhere.status != 0 && nowhere.stderr.contains("--backup-to"), "\(nowhere.stderr)")
        #expect(!FileManager.default.fileExists(atPath: missing), "nothing was created")
    }

    /// With PostgreSQL holding the data, a check of the data directory alone would be partial: refused, naming
    /// the tools to use. A backup needs a node's data directory and a database it reaches, and says which is
    /// missing; nothing is created.
    @Test func aPostgresDeploymentIsToldWhatIsMissing() async throws {
        let data = TestServer.temporaryDirectory().path
        let database = ["--database", "postgres://nimbus@127.0.0.1:1/nimbus"]
        let check = try await Self.nimbus(["check", "--data", data] + database)
        #expect(check.status == 1, "\(check.stdout)\(check.stderr)")
        #expect(check.stderr.contains("keeps its data in PostgreSQL") && check.stderr.contains("amcheck"), "\(check.stderr)")
        let destination = TestServer.temporaryDirectory().path
        let noNode = try await Self.nimbus(["backup", "--data", data, "--to", destination] + database)
        #expect(noNode.status == 1 && noNode.stderr.contains("is not a node's data directory"), "\(noNode.stderr)")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try Data(repeating: 1, count: 32).write(to: EmbeddedDataDirectory(URL(fileURLWithPath: data)).urlSigningKey)
        let unreachable = try await Self.nimbus(["backup", "--data", data, "--to", destination] + database)
        #expect(unreachable.status == 1 && unreachable.stderr.contains("cannot be reached"), "\(unreachable.stderr)")
        let newNode = TestServer.temporaryDirectory().path
        let nothing = try await Self.nimbus(["restore", "--from", destination, "--data", newNode] + database)
        #expect(nothing.status == 1 && nothing.stderr.contains("BACKUP_NOT_FOUND"), "\(nothing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: newNode), "no data directory was made")
        #expect(!FileManager.default.fileExists(atPath: destination), "nothing was created")
    }

    /// With the blobs in a bucket, the data directory holds the database alone: backup and check read the
    /// blobs from the bucket, once told where it is (and only there), and a restore puts them into another;
    /// `serve` refuses a bucket it cannot use before it starts.
    @Test func aDeploymentWithBlobsInABucketIsBackedUpCheckedAndRestoredThroughIt() async throws {
        let store = try await TemporarySeaweedFS.start()
        let location = store.bucket(prefix: "cli/")
        try await S3Client(location).createBucket()
        let server = try await TestServer.start { $0.blobs = .s3(location) }
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let photo = TestServer.temporaryDirectory()
        try Data(repeating: 5, count: 4096).write(to: photo)
        var note = Record(recordType: "Notes")
        note["photo"] = Asset(fileURL: photo)
        _ = try await CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken)
            .privateCloudDatabase.save(note)
        let data = server.dataDirectory.path
        await server.stop()
        var environment = CommandLineTests.environment(server: nil)
        for key in ["AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"] {
            environment[key] = .some(nil)
        }
        func nimbus(_ arguments: [String]) async throws -> ChildProcess.Output {
            try await ChildProcess(executable: try CommandLineTests.executable, arguments: arguments, environment: environment)
                .run()
        }
        let destination = TestServer.temporaryDirectory().path
        let unnamedBackup = try await nimbus(["backup", "--data", data, "--to", destination])
        #expect(
            unnamedBackup.status == 1 && unnamedBackup.stderr.contains("keeps its blobs in s3://nimbus/cli/"),
            "\(unnamedBackup.stderr)")
        let unnamed = try await nimbus(["check", "--data", data])
        #expect(unnamed.status == 1 && unnamed.stderr.contains("keeps its blobs in s3://nimbus/cli/"), "\(unnamed.stderr)")
        let bucket = [
            "--blobs-endpoint", store.endpoint.absoluteString, "--blobs-access-key-id", store.accessKeyID,
            "--blobs-secret-access-key", store.secretAccessKey,
        ]
        let elsewhere = try await nimbus(["check", "--data", data, "--blobs", "s3://nimbus/other"] + bucket)
        #expect(elsewhere.status == 1 && elsewhere.stderr.contains("--blobs names s3://nimbus/other/"), "\(elsewhere.stderr)")
        let checked = try await nimbus(["check", "--data", data, "--blobs", "s3://nimbus/cli"] + bucket)
        #expect(checked.status == 0 && checked.stdout.contains("ok: "), "\(checked.stdout)\(checked.stderr)")
        let backup = try await nimbus(["backup", "--data", data, "--to", destination, "--blobs", "s3://nimbus/cli"] + bucket)
        #expect(backup.status == 0 && backup.stdout.contains(" 1 blobs (4096 bytes)"), "\(backup.stdout)\(backup.stderr)")
        let restored = TestServer.temporaryDirectory()
        let restore = try await nimbus(
            ["restore", "--from", destination, "--data", restored.path, "--blobs", "s3://nimbus/restored"] + bucket)
        #expect(restore.status == 0, "\(restore.stdout)\(restore.stderr)")
        let again = try await TestServer.start(dataDirectory: restored) { $0.blobs = .s3(store.bucket(prefix: "restored/")) }
        let check = try await DataCheck.run(
            dataDirectory: restored,
            blobs: S3BlobStore(
                client: S3Client(store.bucket(prefix: "restored/")),
                decisions: ProcessDecisionLock(sweepGate: EmbeddedDataDirectory(restored).blobSweepGate)))
        #expect(check.isHealthy && check.checked.contains { $0.hasPrefix("blobs: 1 named") }, "\(check)")
        await again.stop()

        let fresh = TestServer.temporaryDirectory().path
        func serve() async throws -> ChildProcess.Output {
            try await ChildProcess(
                executable: try CommandLineTests.executable,
                arguments: ["serve", "--data", fresh, "--port", "0", "--blobs", "s3://nimbus/cli"], environment: environment
            ).run()
        }
        let noEndpoint = try await serve()
        #expect(noEndpoint.status != 0 && noEndpoint.stderr.contains("--blobs-endpoint"), "\(noEndpoint.stderr)")
        // The standard variables, with a wrong secret: said at once, nothing served.
        environment["AWS_ENDPOINT_URL"] = store.endpoint.absoluteString
        environment["AWS_ACCESS_KEY_ID"] = store.accessKeyID
        environment["AWS_SECRET_ACCESS_KEY"] = "not the secret"
        let wrongSecret = try await serve()
        #expect(wrongSecret.status != 0 && wrongSecret.stderr.contains("SignatureDoesNotMatch"), "\(wrongSecret.stderr)")
    }
}
