import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTestingCore
import Testing

/// What the journal answers outside a round.
@Suite(.cleansUp) struct DeviceJournalTests {
    /// `nimbus device status PATH` and a version's history find the item by the path a person gives: where the last
    /// scan found its file or its placeholder, else where the server has it (not downloaded yet).
    @Test func anItemIsFoundByItsPathOnTheDiskOrOnTheServer() async throws {
        let root = TestResources.temporaryDirectory(prefix: "nimbus-journal")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let journal = try DeviceJournal(path: root.appendingPathComponent("journal.sqlite").path)
        func folder(_ id: String, in parent: String?, named name: String) -> DocumentItem {
            DocumentItem(itemID: id, parentID: parent, name: name, kind: .folder)
        }
        func file(_ id: String, in parent: String, named name: String) -> DocumentItem {
            let version = DocumentVersion(
                versionID: "v-" + id,
                content: DocumentContent(
                    contentHash: String(repeating: "ab", count: 32), size: 3, chunks: [], modifiedAt: 1_700_000_000_000),
                device: "a", baseContentHash: nil, savedAt: 1_700_000_000_000)
            return DocumentItem(
                itemID: id, parentID: parent, name: name, kind: .file, current: version, createdAt: 1_700_000_000_000)
        }
        try await journal.applyRemote(
            DocumentChangesResponse(
                items: [
                    folder("documents", in: nil, named: "Documents"), folder("trip", in: "documents", named: "Trip"),
                    file("plan", in: "trip", named: "Plan.txt"), file("evicted", in: "documents", named: "Evicted.txt"),
                    file("renamed", in: "documents", named: "Old name.txt"),
                ], removed: [], syncToken: "t0", moreComing: false))
        func local(_ id: String, _ path: String) -> LocalFile {
            LocalFile(id: ItemID(id), path: path, inode: UInt64(path.count), size: 3, modified: 1, content: nil)
        }
        var scanned = ItemTable<LocalFile>()
        for file in [
            local("documents", "Documents"), local("evicted", "Documents/.Evicted.txt.icloud"),
            local("renamed", "Documents/New name.txt"), local("mine", "Documents/Mine.txt"),
        ] { scanned[file.id] = file }
        try await journal.updateLocalFiles(from: [], to: scanned)

        #expect(try await journal.itemID(atPath: "Documents/Mine.txt") == ItemID("mine"), "new here, not on the server yet")
        #expect(try await journal.itemID(atPath: "Documents/Evicted.txt") == ItemID("evicted"), "by its placeholder")
        #expect(try await journal.itemID(atPath: "Documents/Trip/Plan.txt") == ItemID("plan"), "only on the server")
        #expect(try await journal.itemID(atPath: "Documents/Trip") == ItemID("trip"))
        #expect(try await journal.itemID(atPath: "Documents/New name.txt") == ItemID("renamed"), "renamed on the disk")
        #expect(try await journal.itemID(atPath: "Documents/Old name.txt") == ItemID("renamed"), "the server's name")
        for missing in ["Documents/Missing.txt", "Trip/Plan.txt", "Documents/Trip/Plan.txt/more", "", "Documents/"] {
            #expect(try await journal.itemID(atPath: missing) == nil, "\(missing)")
        }
    }
}
