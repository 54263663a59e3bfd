import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

@testable import NimbusDevice

/// A round reads the synced tree from the journal as its differences from the remote tree: it must answer for
/// every item as the whole synced tree does, while holding only the items where the two are not the same.
@Suite(.cleansUp) struct RoundTreesTests {
    @Test(arguments: [1, 2, 3] as [UInt64])
    func theSyncedTreeOverTheRemoteOneAnswersAsTheWholeTreeDoes(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let root = TestResources.temporaryDirectory(prefix: "nimbus-round-trees")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let journal = try DeviceJournal(path: root.appendingPathComponent("journal.sqlite").path)
        let hashes = ["aa", "bb", "cc"].map { String(repeating: $0, count: 32) } + ["not-a-sha256"]
        let parents: [String?] = [nil, "folder-0", "folder-1"]
        func document(_ id: String) -> DocumentItem {
            let kind: DocumentKind = [.file, .folder, .package].randomElement(using: &random)!
            let version = DocumentVersion(
                versionID: "v-" + id,
                content: DocumentContent(
                    contentHash: hashes.randomElement(using: &random)!, size: 3, chunks: [], modifiedAt: 1_700_000_000_000),
                device: "a", baseContentHash: nil, savedAt: 1_700_000_000_000)
            return DocumentItem(
                itemID: id, parentID: parents.randomElement(using: &random)!,
                name: "name-\(Int.random(in: 0..<3, using: &random))",
                kind: kind, current: kind == .folder ? nil : version)
        }
        let remote = (0..<300).map { document("item-\($0)") }
        try await journal.applyRemote(DocumentChangesResponse(items: remote, removed: [], syncToken: "t", moreComing: false))
        // The synced state of each: the server's (most), one field not the server's, none, or an item the server lacks.
        var differing = 0
        for item in remote + (300..<330).map({ document("item-\($0)") }) {
            let known = remote.contains { $0.itemID == item.itemID }
            var synced = SyncItem(
                place: Place(parent: item.parentID.map(ItemID.init), name: item.name),
                kind: ItemKind(rawValue: item.kind.rawValue)!, content: item.current?.content.contentHash)
            switch Int.random(in: 0..<12, using: &random) {
            case 0: synced.place.name += "-renamed"
            case 1: synced.place.parent = synced.place.parent == nil ? ItemID("folder-0") : nil
            case 2: synced.kind = synced.kind == .file ? .package : .file
            case 3: synced.content = synced.content == nil ? hashes[0] : (synced.content == hashes[1] ? nil : hashes[1])
            case 4:
                if known { differing += 1 }
                continue
            default: if known { try await journal.recordDiskStep(ItemID(item.itemID), .unchanged, synced: synced); continue }
            }
            differing += 1
            try await journal.recordDiskStep(ItemID(item.itemID), .unchanged, synced: synced)
        }

        let whole = try await journal.syncedTree()
        let (remoteTree, synced) = try await journal.roundTrees()
        #expect(remoteTree.items.count == 300)
        #expect(synced.differences.count == differing, "only the items whose synced state is not the server's")
        for index in 0..<340 {
            let id = ItemID("item-\(index)")
            #expect(synced[id] == whole[id], "\(id)")
        }
        var listed: [ItemID] = []
        synced.forEachID { listed.append($0) }
        #expect(listed.count == whole.items.count && Set(listed) == Set(whole.items.keys))
        // The same answers from the tree the tests' devices build.
        let built = SyncedTree(whole, over: remoteTree)
        #expect(built.differences.count == differing)
        #expect((0..<340).allSatisfy { built[ItemID("item-\($0)")] == whole[ItemID("item-\($0)")] })
    }
}
