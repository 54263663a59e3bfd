import Crypto
import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusStore
import NimbusTesting
import NimbusTestingCore
import Testing

/// Devices whose server was restored from a backup older than what they synced: their tokens are
/// answered as expired, and they start over without losing what only they still hold.
@Suite(.cleansUp) struct DeviceRestoreTests {
    @Test func devicesResyncWithARestoredServerAndLoseNothingTheyHold() async throws {
        let fixture = try await DeviceSyncTests.Fixture.make()
        try fixture.a.write("Documents/Kept.txt", "in the backup")
        try fixture.a.write("Documents/Edited.txt", "first draft")
        try fixture.a.write("Documents/Unwanted.txt", "deleted while the server is down")
        try await fixture.settle()
        let backups = TestResources.temporaryDirectory(prefix: "backups")
        try await EmbeddedBackup.create(of: EmbeddedDataDirectory(fixture.deployment.dataDirectory), to: backups)

        // Acknowledged by the server after the backup: lost when it is restored, still on the devices.
        try fixture.a.write("Documents/Lost.txt", "written after the backup")
        try fixture.b.write("Documents/Edited.txt", "second draft")
        try await fixture.settle()
        #expect(fixture.a.read("Documents/Edited.txt") == "second draft")
        await fixture.deployment.stop()
        // A delete on the laptop the server has not heard of when it comes back restored.
        try FileManager.default.removeItem(at: fixture.b.folder.appendingPathComponent("Documents/Unwanted.txt"))

        let restoredDirectory = TestResources.temporaryDirectory(prefix: "restored")
        try await EmbeddedRestore.restore(from: backups, into: EmbeddedDataDirectory(restoredDirectory))
        let restored = try await TestDeployment.start(.oneNode, dataDirectory: restoredDirectory)
        // Another device saves in the restored history first, past the devices' positions in the lost one.
        let other = try await DeviceSyncTests.Fixture.device("tablet", deployment: restored, app: fixture.app)
        for number in 0..<6 { try other.write("Elsewhere/\(number).txt", "from the tablet") }
        _ = try await other.engine.sync()
        let a = try Self.pointed(fixture.a, "phone", at: restored, app: fixture.app)
        let b = try Self.pointed(fixture.b, "laptop", at: restored, app: fixture.app)
        var settled = false
        for _ in 0..<20 {
            let busyA = try await a.engine.syncOnce()
            let busyB = try await b.engine.syncOnce()
            if !busyA && !busyB {
                settled = true
                break
            }
        }
        #expect(settled)

        for device in [a, b] {
            #expect(device.read("Elsewhere/5.txt") == "from the tablet")
            #expect(device.read("Documents/Unwanted.txt") == nil, "the laptop's delete reached the server, not undone")
            #expect(device.read("Documents/Kept.txt") == "in the backup")
            #expect(device.read("Documents/Lost.txt") == "written after the backup", "a file only the devices held is kept")
            #expect(device.read("Documents/Edited.txt") == "second draft")
        }
        let session = try await restored.signIn(email: "ann@example.com", device: "inspector-2")
        let items = try await DocumentClient(
            client: NimbusClient(session: session, apiToken: fixture.app.apiToken), container: fixture.app.container
        )
        .changes(since: nil).items
        let byName = Dictionary(items.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byName["Lost.txt"]?.current != nil, "the file the restore lost is uploaded again")
        let edited = try #require(byName["Edited.txt"])
        let contents = Set(([edited.current].compactMap { $0 } + edited.conflicts).map(\.content.contentHash))
        #expect(contents.contains(Self.hash("second draft")), "the edit the restore lost is on the server again")
    }

    /// The same device (folder and journal) talking to another server with the session it had.
    static func pointed(
        _ device: DeviceSyncTests.Device, _ name: String, at deployment: TestDeployment, app: TestServer.SeededApp
    )
        throws -> DeviceSyncTests.Device
    {
        let client = DocumentClient(
            client: NimbusClient(
                server: deployment.url, apiToken: app.apiToken, sessionToken: device.engine.client.client.sessionToken),
            container: app.container)
        return DeviceSyncTests.Device(
            engine: SyncEngine(client: client, folder: device.folder, journal: device.journal, device: name),
            folder: device.folder, journal: device.journal)
    }

    static func hash(_ text: String) -> String { SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined() }
}
