import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// File packages: a folder such as `Essay.pages` syncs and is versioned as one document.
@Suite(.cleansUp) struct PackageTests {
    typealias Fixture = DeviceSyncTests.Fixture

    @Test func aPackageSyncsAndIsVersionedAsOneDocument() async throws {
        let fixture = try await Fixture.make()
        let (a, b) = (fixture.a, fixture.b)
        try a.write("Documents/Essay.pages/index.xml", "<essay>draft</essay>")
        try a.write("Documents/Essay.pages/Data/picture.png", "PNG bytes")
        try FileManager.default.createDirectory(
            at: a.folder.appendingPathComponent("Documents/Essay.pages/Metadata"), withIntermediateDirectories: true)
        try await fixture.settle()

        let items = try await fixture.client.changes(since: nil).items
        let essay = try #require(items.first { $0.name == "Essay.pages" })
        #expect(essay.kind == .package && essay.current != nil)
        #expect(!items.contains { $0.name == "index.xml" || $0.name == "Data" }, "what a package holds is its content")
        #expect(
            try b.files().filter { $0.key.hasPrefix("Documents/Essay.pages") } == [
                "Documents/Essay.pages": "/", "Documents/Essay.pages/index.xml": "<essay>draft</essay>",
                "Documents/Essay.pages/Data": "/", "Documents/Essay.pages/Data/picture.png": "PNG bytes",
                "Documents/Essay.pages/Metadata": "/",
            ])

        // An edit inside it is a new version of the package.
        try b.write("Documents/Essay.pages/index.xml", "<essay>final</essay>")
        try await fixture.settle()
        #expect(a.read("Documents/Essay.pages/index.xml") == "<essay>final</essay>")
        #expect(try await fixture.client.versions(of: essay.itemID).history.count == 1)

        // Edited on both from the same version: both kept, the package in conflict.
        try a.write("Documents/Essay.pages/index.xml", "<essay>A</essay>")
        try b.write("Documents/Essay.pages/Data/picture.png", "B's picture")
        try await fixture.settle()
        let conflicted = try #require(try await fixture.client.changes(since: nil).items.first { $0.itemID == essay.itemID })
        #expect(conflicted.conflicts.count == 1)
        #expect(a.read("Documents/Essay.pages/index.xml") == b.read("Documents/Essay.pages/index.xml"))

        // Renamed and then deleted on one device: the other follows, and Recently Deleted keeps it.
        #expect(
            rename(
                a.folder.appendingPathComponent("Documents/Essay.pages").path,
                a.folder.appendingPathComponent("Documents/Thesis.pages").path) == 0)
        try await fixture.settle()
        #expect(b.read("Documents/Thesis.pages/Data/picture.png") != nil && b.read("Documents/Essay.pages/index.xml") == nil)
        try FileManager.default.removeItem(at: b.folder.appendingPathComponent("Documents/Thesis.pages"))
        try await fixture.settle()
        #expect(!FileManager.default.fileExists(atPath: a.folder.appendingPathComponent("Documents/Thesis.pages").path))
        #expect(try await fixture.client.trash().items.map(\.name) == ["Thesis.pages"])
    }

    @Test func aPackageStreamRebuildsItsFolderAndNothingOutsideIt() throws {
        let root = TestResources.temporaryDirectory(prefix: "nimbus-package")
        let package = root.appendingPathComponent("Deck.key")
        try FileManager.default.createDirectory(
            at: package.appendingPathComponent("Slides/Empty"), withIntermediateDirectories: true)
        try Data("one".utf8).write(to: package.appendingPathComponent("Slides/1.xml"))
        try Data().write(to: package.appendingPathComponent("empty.txt"))
        let archive = root.appendingPathComponent("deck.stream")
        #expect(FileManager.default.createFile(atPath: archive.path, contents: nil))
        let handle = try FileHandle(forWritingTo: archive)
        let hash = try PackageArchive.pack(package, into: handle)
        try handle.close()
        #expect(hash == (try PackageArchive.hash(of: package)), "the same package makes the same stream")
        let copy = root.appendingPathComponent("Copy.key")
        try PackageArchive.unpack(archive, into: copy)
        #expect(try PackageArchive.hash(of: copy) == hash)
        #expect(FileManager.default.contents(atPath: copy.appendingPathComponent("Slides/1.xml").path) == Data("one".utf8))

        // A stream naming a path outside its folder is refused, and nothing lands outside it.
        var hostile = Data("NIMBUSPKG1\n".utf8)
        let path = Data("../escaped.txt".utf8)
        hostile.append(UInt8(ascii: "F"))
        hostile.append(contentsOf: [0, UInt8(path.count)])
        hostile.append(path)
        hostile.append(contentsOf: [0, 0, 0, 0, 0, 0, 0, 3])
        hostile.append(Data("bad".utf8))
        let bad = root.appendingPathComponent("bad.stream")
        try hostile.write(to: bad)
        #expect(throws: NimbusError.self) { try PackageArchive.unpack(bad, into: root.appendingPathComponent("Bad.key")) }
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("escaped.txt").path))
    }
}
