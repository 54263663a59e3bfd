import Crypto
import Foundation
import NimbusCore
import NimbusDevice
import NimbusTestingCore
import Synchronization
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
    /// chased to its end (its upload reads on as it grows). Here a file grows all through the scan, which lists its
    /// folder first and then hashes the 2,000 new files named before it.
    @Test func aGrowingFileIsHashedToTheSizeItWasListedAt() async throws {
        let folder = TestResources.temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for index in 0..<2_000 { try Data("note \(index)".utf8).write(to: folder.appendingPathComponent("Note-\(index).txt")) }
        let url = folder.appendingPathComponent("Recording.mov")
        // Appended a block at a time; its length is no power of two, so no block lines up with a read.
        let block = Data((0..<((64 << 10) + 17)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        try block.write(to: url)
        let writing = Atomic(true)
        let appended = Atomic(0)
        let appender = Thread {
            guard let handle = FileHandle(forWritingAtPath: url.path) else { return }
            defer { try? handle.close() }
            _ = try? handle.seekToEnd()
            while writing.load(ordering: .relaxed) && appended.load(ordering: .relaxed) < 4_000 {
                try? handle.write(contentsOf: block)
                appended.add(1, ordering: .relaxed)
                usleep(2_000)
            }
        }
        appender.start()
        defer { writing.store(false, ordering: .relaxed) }
        #expect(await eventually { appended.load(ordering: .relaxed) >= 4 })
        let scan = try LocalScanner(folder: folder).scan(known: [])
        let file = scan.file(at: try #require(scan.files.values.firstIndex { $0.path == "Recording.mov" }))
        writing.store(false, ordering: .relaxed)
        var listed = SHA256()
        for start in stride(from: 0, to: Int(file.size), by: block.count) {
            listed.update(data: block.prefix(Int(file.size) - start))
        }
        #expect(file.content == Secrets.hex(listed.finalize()), "the first \(file.size) bytes")
        #expect(try FileContent.hash(of: url) != file.content, "the file grew after it was listed")
        #expect(try FileContent.hash(of: url, upTo: 1 << 40) == (try FileContent.hash(of: url)), "past the end, all of it")
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
