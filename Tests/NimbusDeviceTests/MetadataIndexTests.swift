import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTestingCore
import Testing

/// The daemon's index of apps' metadata queries, against a real journal: what a watch hears when the journal
/// records the server's changes.
@Suite(.cleansUp) struct MetadataIndexTests {
    static func folder(_ id: String, in parent: String?, named name: String) -> DocumentItem {
        DocumentItem(itemID: id, parentID: parent, name: name, kind: .folder)
    }

    static func file(
        _ id: String, in parent: String = "documents", named name: String, content: String = String(repeating: "ab", count: 32)
    ) -> DocumentItem {
        let version = DocumentVersion(
            versionID: "v-" + id,
            content: DocumentContent(contentHash: content, size: 3, chunks: [], modifiedAt: 1_700_000_000_000),
            device: "a", baseContentHash: nil, savedAt: 1_700_000_000_000)
        return DocumentItem(
            itemID: id, parentID: parent, name: name, kind: .file, current: version, createdAt: 1_700_000_000_000)
    }

    /// The server renamed a folder whose items the journal has not heard of again (the disk has not caught up):
    /// a watch hears at once of each item inside it at its new path, with the one it had before.
    @Test func aFolderTheServerRenamedMovesWhatIsInsideIt() async throws {
        let root = TestResources.temporaryDirectory(prefix: "nimbus-index")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let journal = try DeviceJournal(path: root.appendingPathComponent("journal.sqlite").path)
        let file = Self.file("file", in: "plans", named: "Day 2.txt")
        try await journal.applyRemote(
            DocumentChangesResponse(
                items: [
                    Self.folder("documents", in: nil, named: "Documents"), Self.folder("trip", in: "documents", named: "Trip"),
                    Self.folder("plans", in: "trip", named: "Plans"), file,
                ], removed: [], syncToken: "t0", moreComing: false))
        let container = root.appendingPathComponent("container")
        let index = MetadataIndex(journal: journal, activity: SyncActivity(), folder: container)
        let spec = MetadataQuerySpec(
            scopes: [.documents], predicate: try MetadataPredicate("%K LIKE '*.txt'", [.string(MetadataItem.Key.fsName)]))
        let (items, updates) = try await index.watch(spec)
        let (before, after) = (
            container.path + "/Documents/Trip/Plans/Day 2.txt", container.path + "/Documents/Voyage/Plans/Day 2.txt"
        )
        #expect(items.map(\.path) == [before])

        let heard = Recorder(updates)
        try await journal.applyRemote(
            DocumentChangesResponse(
                items: [Self.folder("trip", in: "documents", named: "Voyage")], removed: [], syncToken: "t1", moreComing: false))
        let update = await heard.first { $0.update != nil }?.update
        #expect(update?.changed.map(\.path) == [after], "the item inside, two folders down, at its new path")
        #expect(update?.previousPaths["file"] == before)
    }

    /// Whether the disk holds the server's version is read from the two content hashes: the same, another (an
    /// older version), a placeholder, or none, whatever the hashes' form.
    @Test func eachItemSaysWhetherTheDiskHoldsTheServersVersion() async throws {
        let root = TestResources.temporaryDirectory(prefix: "nimbus-index")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let journal = try DeviceJournal(path: root.appendingPathComponent("journal.sqlite").path)
        let (newer, older) = (String(repeating: "0f", count: 32), String(repeating: "e1", count: 32))
        // 64 characters, all but the last a digit: kept as text, and equal only to the same text.
        let nearlyHex = String(newer.dropLast()) + "g"
        func file(_ id: String, _ name: String, content: String) -> DocumentItem { Self.file(id, named: name, content: content) }
        try await journal.applyRemote(
            DocumentChangesResponse(
                items: [
                    Self.folder("documents", in: nil, named: "Documents"), file("same", "same.txt", content: newer),
                    file("older", "older.txt", content: newer), file("evicted", "evicted.txt", content: newer),
                    file("remote", "remote.txt", content: newer), file("text", "text.txt", content: "not a hash"),
                    file("upper", "upper.txt", content: newer.uppercased()), file("near", "near.txt", content: nearlyHex),
                ], removed: [], syncToken: "t0", moreComing: false))
        func local(_ id: String, _ path: String, content: String?) -> (ItemID, LocalFile) {
            (ItemID(id), LocalFile(id: ItemID(id), path: path, inode: UInt64(path.count), size: 3, modified: 1, content: content))
        }
        try await journal.updateLocalFiles(
            from: [],
            to: ItemTable(
                Dictionary(uniqueKeysWithValues: [
                    local("documents", "Documents", content: nil), local("same", "Documents/same.txt", content: newer),
                    local("older", "Documents/older.txt", content: older),
                    local("evicted", "Documents/.evicted.txt.icloud", content: newer),
                    local("text", "Documents/text.txt", content: "not a hash"),
                    local("upper", "Documents/upper.txt", content: newer),
                    local("near", "Documents/near.txt", content: nearlyHex),
                ])))
        let container = root.appendingPathComponent("container")
        let index = MetadataIndex(journal: journal, activity: SyncActivity(), folder: container)
        let items = try await index.query(
            MetadataQuerySpec(scopes: [.documents], predicate: try MetadataPredicate("TRUEPREDICATE")))
        let status = Dictionary(uniqueKeysWithValues: items.map { ($0.name, $0.downloadingStatus) })
        #expect(
            status == [
                "same.txt": .current, "older.txt": .downloaded, "evicted.txt": .notDownloaded, "remote.txt": .notDownloaded,
                "text.txt": .current, "upper.txt": .downloaded, "near.txt": .current,
            ])
    }

    /// What the journal records while a watch gathers (the index busy walking thousands of items, then making the
    /// set of those it found) is not lost: either the gathered items have it or an update brings it.
    @Test func whatChangesWhileAWatchGathersComesAsAnUpdate() async throws {
        let root = TestResources.temporaryDirectory(prefix: "nimbus-index")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let journal = try DeviceJournal(path: root.appendingPathComponent("journal.sqlite").path)
        func file(_ id: String) -> DocumentItem { Self.file(id, named: id + ".txt") }
        try await journal.applyRemote(
            DocumentChangesResponse(
                items: [Self.folder("documents", in: nil, named: "Documents")] + (0..<5000).map { file("old-\($0)") },
                removed: [], syncToken: "t0", moreComing: false))
        let index = MetadataIndex(
            journal: journal, activity: SyncActivity(), folder: root.appendingPathComponent("container"))
        let spec = MetadataQuerySpec(
            scopes: [.documents], predicate: try MetadataPredicate("%K LIKE '*.txt'", [.string(MetadataItem.Key.fsName)]))
        #expect(try await index.query(spec).count == 5000, "the index is loaded before the watches")

        var arrivedAfterGathering = 0
        for round in 0..<8 {
            let name = "new-\(round)"
            async let change: Void = journal.applyRemote(
                DocumentChangesResponse(items: [file(name)], removed: [], syncToken: "t\(round + 1)", moreComing: false))
            let (items, updates) = try await index.watch(spec)
            try await change
            let heard = Recorder(updates)
            guard !items.contains(where: { $0.name == name + ".txt" }) else { continue }
            arrivedAfterGathering += 1
            let update = await heard.first { $0.update?.added.contains { $0.name == name + ".txt" } == true }
            #expect(update != nil, "round \(round): the item the journal recorded while the watch gathered")
        }
        #expect(arrivedAfterGathering > 0, "some changes came while the watches gathered")
    }
}
