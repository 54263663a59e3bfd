import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// Evicted files: a placeholder keeps the item's place and metadata, follows the server's edits and
/// moves, can be renamed or deleted like the file, and the file comes back when asked for.
@Suite(.cleansUp) struct PlaceholderTests {
    typealias Fixture = DeviceSyncTests.Fixture

    func ask(_ device: DeviceSyncTests.Device, _ command: ControlRequest.Command, _ path: String) async -> ControlResponse {
        await DeviceControl(engine: device.engine, container: "iCloud.com.example.Cloudy").answer(
            ControlRequest(command: command, path: path))
    }

    func exists(_ device: DeviceSyncTests.Device, _ path: String) -> Bool {
        FileManager.default.fileExists(atPath: device.folder.appendingPathComponent(path).path)
    }

    @Test func anEvictedFileKeepsItsPlaceAndComesBackWhenAskedFor() async throws {
        let fixture = try await Fixture.make()
        let (a, b) = (fixture.a, fixture.b)
        try a.write("Documents/Report.txt", "first draft")
        try await fixture.settle()

        let evicted = await ask(a, .evict, "Documents/Report.txt")
        #expect(evicted.item?.state == .notDownloaded, "\(evicted)")
        #expect(!exists(a, "Documents/Report.txt") && exists(a, "Documents/.Report.txt.icloud"))
        let placeholder = try #require(Placeholder(contentsOf: a.folder.appendingPathComponent("Documents/.Report.txt.icloud")))
        #expect(placeholder.name == "Report.txt" && placeholder.size == 11)
        #expect(try await !a.engine.syncOnce(), "a placeholder is the item: nothing to do")
        #expect(b.read("Documents/Report.txt") == "first draft", "eviction is this device's business alone")

        // Edited elsewhere: the placeholder follows, and nothing is downloaded.
        try b.write("Documents/Report.txt", "second draft")
        try await fixture.settle()
        #expect(!exists(a, "Documents/Report.txt"))
        let followed = try #require(Placeholder(contentsOf: a.folder.appendingPathComponent("Documents/.Report.txt.icloud")))
        #expect(followed.contentHash != placeholder.contentHash && followed.size == 12)

        // Renamed here as its placeholder: a move on the server.
        #expect(
            rename(
                a.folder.appendingPathComponent("Documents/.Report.txt.icloud").path,
                a.folder.appendingPathComponent("Documents/.Summary.txt.icloud").path) == 0)
        try await fixture.settle()
        #expect(b.read("Documents/Summary.txt") == "second draft" && b.read("Documents/Report.txt") == nil)

        let downloaded = await ask(a, .download, "Documents/Summary.txt")
        #expect(downloaded.item?.state == .synced, "\(downloaded)")
        #expect(a.read("Documents/Summary.txt") == "second draft" && !exists(a, "Documents/.Summary.txt.icloud"))
        #expect(try await !a.engine.syncOnce(), "the downloaded file is the synced version")

        // A file with changes not yet synced stays.
        try a.write("Documents/Summary.txt", "third draft, not synced")
        let refused = await ask(a, .evict, "Documents/Summary.txt")
        #expect(refused.error?.contains("not synced yet") == true && a.read("Documents/Summary.txt") == "third draft, not synced")
        try await fixture.settle()

        // Deleting the placeholder deletes the item, into Recently Deleted.
        #expect(await ask(a, .evict, "Documents/Summary.txt").item?.state == .notDownloaded)
        #expect(unlink(a.folder.appendingPathComponent("Documents/.Summary.txt.icloud").path) == 0)
        try await fixture.settle()
        #expect(!exists(b, "Documents/Summary.txt"))
        #expect(try await fixture.client.trash().items.map(\.name) == ["Summary.txt"])
    }

    /// A daemon killed between writing the placeholder and recording it (or between writing a download and
    /// recording it) leaves the other form of the file than the journal knows: it is still the same item.
    @Test func anEvictionOrDownloadCutShortKeepsTheItem() async throws {
        let fixture = try await Fixture.make()
        let a = fixture.a
        try a.write("Documents/Report.txt", "quarterly figures")
        try await fixture.settle()
        let stub = a.folder.appendingPathComponent("Documents/.Report.txt.icloud")
        let file = a.folder.appendingPathComponent("Documents/Report.txt")
        let hash = try #require(try await a.journal.localFiles().first { $0.path == "Documents/Report.txt" }?.content)
        try Placeholder(name: "Report.txt", size: 17, contentHash: hash).encoded().write(to: stub)
        #expect(unlink(file.path) == 0)
        #expect(try await !a.engine.syncOnce(), "the placeholder is the same item: nothing to do")
        #expect(try await fixture.client.trash().items.isEmpty && fixture.b.read("Documents/Report.txt") == "quarterly figures")

        try Data("quarterly figures".utf8).write(to: file)
        #expect(unlink(stub.path) == 0)
        #expect(try await !a.engine.syncOnce(), "the downloaded file is the same item: nothing to do")
        #expect(try await fixture.client.trash().items.isEmpty)
        #expect(try await a.journal.localFiles().contains { $0.path == "Documents/Report.txt" })
    }

    @Test func aContainerOnDemandGetsPlaceholdersUntilAFileIsAskedFor() async throws {
        let fixture = try await Fixture.make()
        let tablet = try await Fixture.device("tablet", deployment: fixture.deployment, app: fixture.app, onDemand: true)
        try fixture.a.write("Documents/Photos/Beach.jpg", "sand and sea")
        try await fixture.settle()
        #expect(try await tablet.engine.sync())
        #expect(exists(tablet, "Documents/Photos") && exists(tablet, "Documents/Photos/.Beach.jpg.icloud"))
        #expect(!exists(tablet, "Documents/Photos/Beach.jpg"))
        #expect(await ask(tablet, .status, "Documents/Photos/Beach.jpg").item?.state == .notDownloaded)
        #expect(await ask(tablet, .download, "Documents/Photos/Beach.jpg").item?.state == .synced)
        #expect(tablet.read("Documents/Photos/Beach.jpg") == "sand and sea")
        // Downloaded once, it stays current.
        try fixture.a.write("Documents/Photos/Beach.jpg", "sand, sea and a boat")
        try await fixture.settle()
        #expect(try await tablet.engine.sync())
        #expect(tablet.read("Documents/Photos/Beach.jpg") == "sand, sea and a boat")
        let missing = await ask(tablet, .download, "Documents/Photos/Nothing.jpg")
        #expect(missing.error?.contains("is not an item") == true)
    }
}
