import Crypto
import Foundation
import NimbusCore
import NimbusDevice
import NimbusTestingCore
import Testing

/// How a scan tells which item each file on the disk is, from what the journal knew of the folder.
@Suite(.cleansUp) struct LocalScannerTests {
    /// A folder holding `files` (name → text), written in order, each with its own modification time.
    private func folder(_ files: [(String, String)]) throws -> URL {
        let folder = TestResources.temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (index, (name, text)) in files.enumerated() {
            let url = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            let time = Date(timeIntervalSince1970: 1_700_000_000 + Double(index))
            try FileManager.default.setAttributes([.modificationDate: time], ofItemAtPath: url.path)
        }
        return folder
    }

    /// The file at `path` as a scan records it, under `id`.
    private func recorded(_ id: String, _ path: String, in folder: URL) throws -> LocalFile {
        let scan = try LocalScanner(folder: folder).scan(known: [])
        var file = scan.file(at: try #require(scan.files.values.firstIndex { $0.path == path }))
        file.id = ItemID(id)
        return file
    }

    /// A scan hashes the bytes it listed: a file still being written is hashed to the size its listing found, not
    /// chased to its end (its upload reads on as it grows). Past the file's end, the whole file.
    @Test func aFileIsHashedToTheSizeItWasListedAt() throws {
        let folder = TestResources.temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("Growing.mov")
        let bytes = Data((0..<(9 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 12) })
        try bytes.write(to: file)
        for size in [0, 1, 4 << 20, (4 << 20) + 1, (9 << 20) - 1] {
            #expect(
                try FileContent.hash(of: file, upTo: Int64(size)) == Secrets.hex(SHA256.hash(data: bytes.prefix(size))),
                "\(size) bytes")
        }
        let whole = Secrets.hex(SHA256.hash(data: bytes))
        #expect(try FileContent.hash(of: file) == whole && FileContent.hash(of: file, upTo: 10 << 20) == whole)
    }

    @Test func aRenamedFileKeepsItsItem() throws {
        let folder = try folder([("Draft.txt", "words")])
        let known = try recorded("draft", "Draft.txt", in: folder)
        try FileManager.default.moveItem(
            at: folder.appendingPathComponent("Draft.txt"), to: folder.appendingPathComponent("Final.txt"))
        let scan = try LocalScanner(folder: folder).scan(known: [known])
        #expect(scan.files[ItemID("draft")]?.path == "Final.txt")
    }

    /// Files replaced by copies (a folder restored from a backup, say) get new inodes, which may be ones other
    /// files of the folder had: each file stays the item at its path, none takes another's identity.
    @Test func aFileGivenAnotherFilesOldInodeStaysTheItemAtItsPath() throws {
        let folder = try folder([("Alpha.txt", "alpha"), ("Beta.txt", "beta!")])
        let alpha = try recorded("alpha", "Alpha.txt", in: folder)
        let beta = try recorded("beta", "Beta.txt", in: folder)
        // The journal knew each file with the other's inode now: as if both were deleted and written again.
        var knownAlpha = alpha
        var knownBeta = beta
        (knownAlpha.inode, knownBeta.inode) = (beta.inode, alpha.inode)
        let scan = try LocalScanner(folder: folder).scan(known: [knownAlpha, knownBeta])
        #expect(scan.files[ItemID("alpha")]?.path == "Alpha.txt")
        #expect(scan.files[ItemID("beta")]?.path == "Beta.txt")
        #expect(scan.tree[ItemID("alpha")]?.content == alpha.content)
    }

    /// Paths are cut at their last slash by bytes: names of any script, combining marks and emoji included, keep
    /// their folder and their whole name.
    @Test func namesInAnyScriptAreTheirFoldersItems() throws {
        let folder = try folder([])
        let names = ["Café", "Re\u{301}sume\u{301}", "日本語", "👩‍👩‍👧 family", "Ünïcödé.txt"]
        for name in names {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(name), withIntermediateDirectories: true)
            try Data(name.utf8).write(to: folder.appendingPathComponent(name).appendingPathComponent(name + " ✓.txt"))
        }
        let tree = try LocalScanner(folder: folder).scan(known: []).tree
        for name in names {
            let parent = try #require(tree.items.first { $0.value.place == Place(parent: nil, name: name) }?.key)
            let child = try #require(tree.items.first { $0.value.place.parent == parent })
            #expect(child.value.place.name == name + " ✓.txt")
            #expect(child.value.content == Secrets.hex(SHA256.hash(data: Data(name.utf8))))
        }
    }

    @Test func aRenamedFolderKeepsItsItemThoughWhatItHoldsChanged() throws {
        let folder = try folder([])
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("Trips"), withIntermediateDirectories: true)
        let known = try recorded("trips", "Trips", in: folder)
        try Data("new".utf8).write(to: folder.appendingPathComponent("Trips/Rome.txt"))
        try FileManager.default.moveItem(
            at: folder.appendingPathComponent("Trips"), to: folder.appendingPathComponent("Travel"))
        let scan = try LocalScanner(folder: folder).scan(known: [known])
        #expect(scan.files[ItemID("trips")]?.path == "Travel")
    }
}
