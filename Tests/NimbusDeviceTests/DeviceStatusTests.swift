import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// `nimbus device status`'s answers: for any path, whether it is synced and, if not, why — in words.
@Suite(.cleansUp) struct DeviceStatusTests {
    typealias Fixture = DeviceSyncTests.Fixture

    func status(_ device: DeviceSyncTests.Device, _ path: String?) async throws -> ControlResponse {
        await DeviceControl(engine: device.engine, container: "iCloud.com.example.Cloudy").answer(
            ControlRequest(command: .status, path: path))
    }

    func item(_ device: DeviceSyncTests.Device, _ path: String) async throws -> ItemStatus {
        let response = try await status(device, path)
        return try #require(response.item, "\(response.error ?? "no answer")")
    }

    @Test func eachPathSaysWhetherItIsSyncedAndWhyNot() async throws {
        let fixture = try await Fixture.make()
        let a = fixture.a
        try a.write("Documents/Notes.txt", "synced soon")
        try a.write("Documents/cache.nosync/big.bin", "never synced")
        try a.write("Documents/tab\u{1}name.txt", "a name no system syncs")
        try a.write("Documents/Q: why?.txt", "a name Windows refuses")
        #expect(try await item(a, "Documents/Notes.txt").state == .queued, "written, not scanned yet")
        try await fixture.settle()

        let notes = try await item(a, "Documents/Notes.txt")
        #expect(notes.state == .synced && notes.reason == "synced" && notes.nameIssues.isEmpty)
        let absolute = try await item(a, a.folder.appendingPathComponent("Documents/Notes.txt").path)
        #expect(absolute.path == "Documents/Notes.txt" && absolute.state == .synced, "absolute paths work too")
        let excluded = try await item(a, "Documents/cache.nosync/big.bin")
        #expect(excluded.state == .excluded && excluded.reason.contains(".nosync"))
        let invalid = try await item(a, "Documents/tab\u{1}name.txt")
        #expect(invalid.state == .nameInvalid && invalid.reason.hasPrefix("cannot sync this name"))
        let windows = try await item(a, "Documents/Q: why?.txt")
        #expect(windows.state == .synced && !windows.nameIssues.isEmpty && windows.reason.contains("not valid on"))
        #expect(try await item(a, "Documents/Missing.txt").state == .notFound)
        #expect(try await status(a, "/etc/passwd").error?.contains("is not inside") == true)
        let folder = try #require(try await status(a, nil).folders?.first)
        #expect(folder.pending == 0 && folder.problem == nil && !folder.offline && folder.lastSyncedAt != nil)

        // Edited on both devices from the same version: both see the conflict, and the folder counts it.
        try fixture.b.write("Documents/Notes.txt", "B's words")
        try a.write("Documents/Notes.txt", "A's words")
        try await fixture.settle()
        for device in [a, fixture.b] {
            let conflicted = try await item(device, "Documents/Notes.txt")
            #expect(conflicted.state == .conflict && conflicted.reason.contains("1 unresolved conflict version"))
            #expect(try await status(device, nil).folders?.first?.conflicts == 1)
        }

        // The server gone: what waits says it is waiting for the network.
        try a.write("Documents/Offline.txt", "written offline")
        await fixture.deployment.stop()
        await #expect(throws: NimbusError.self) { try await a.engine.syncOnce() }
        #expect(try await item(a, "Documents/Offline.txt").state == .waitingForNetwork)
        let offline = try #require(try await status(a, nil).folders?.first)
        #expect(offline.offline && offline.problem?.hasPrefix("offline") == true)
    }

    @Test func anUploadOverTheQuotaSaysSo() async throws {
        let fixture = try await Fixture.make { $0.userQuotaBytes = 1_000 }
        try fixture.a.write("Documents/Big.txt", String(repeating: "x", count: 5_000))
        await #expect(throws: NimbusError.self) { try await fixture.a.engine.syncOnce() }
        let big = try await item(fixture.a, "Documents/Big.txt")
        #expect(big.state == .overQuota && big.reason.hasPrefix("over quota"), "\(big)")
        #expect(try await status(fixture.a, nil).folders?.first?.problem?.hasPrefix("over quota") == true)
    }
}
