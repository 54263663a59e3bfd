import Testing

@testable import NimbusDevice

/// The planner's rules, one situation each, played on the model server by two devices.
@Suite struct SyncPlannerTests {
    var server = ModelServer()
    var a = ModelDevice()
    var b = ModelDevice()

    static func file(_ name: String, in parent: ItemID? = nil, _ content: String) -> SyncItem {
        SyncItem(place: Place(parent: parent, name: name), kind: .file, content: content)
    }

    static func folder(_ name: String, in parent: ItemID? = nil) -> SyncItem {
        SyncItem(place: Place(parent: parent, name: name), kind: .folder, content: nil)
    }

    /// Syncs both devices until neither has anything left to do.
    mutating func settle() {
        for _ in 0..<20 {
            let busyA = a.sync(with: &server)
            let busyB = b.sync(with: &server)
            if !busyA && !busyB { return }
        }
        Issue.record("still syncing after 20 rounds")
    }

    /// Both devices converged on the server's tree, and neither destroyed content the server lacked.
    func expectConverged(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(a.disk == server.tree && b.disk == server.tree, sourceLocation: sourceLocation)
        #expect(a.lostContent.isEmpty && b.lostContent.isEmpty, sourceLocation: sourceLocation)
    }

    mutating func start(with items: [String: SyncItem]) {
        for (id, item) in items { a.disk[ItemID(id)] = item }
        settle()
    }

    @Test mutating func aNewFileReachesTheOtherDevice() {
        start(with: ["n": Self.file("note.txt", "hello")])
        #expect(b.disk[ItemID("n")] == Self.file("note.txt", "hello"))
        expectConverged()
    }

    @Test mutating func editsOnBothSidesKeepBothVersions() {
        start(with: ["f": Self.file("f", "v1")])
        a.disk[ItemID("f")]?.content = "a2"
        b.disk[ItemID("f")]?.content = "b2"
        _ = b.sync(with: &server)
        settle()
        #expect(server.versions.isSuperset(of: ["v1", "a2", "b2"]))
        #expect(server.tree[ItemID("f")]?.content == "b2", "the later version is current")
        expectConverged()
    }

    @Test(arguments: [true, false]) mutating func anEditWinsOverADelete(deleterFirst: Bool) {
        start(with: ["f": Self.file("f", "v1")])
        a.disk[ItemID("f")] = nil
        b.disk[ItemID("f")]?.content = "b2"
        if deleterFirst { _ = a.sync(with: &server) } else { _ = b.sync(with: &server) }
        settle()
        #expect(server.tree[ItemID("f")] == Self.file("f", "b2"))
        expectConverged()
    }

    @Test mutating func aMoveAndAnEditBothApply() {
        start(with: ["d": Self.folder("d"), "f": Self.file("f", "v1")])
        a.disk[ItemID("f")]?.place = Place(parent: ItemID("d"), name: "renamed")
        b.disk[ItemID("f")]?.content = "b2"
        settle()
        #expect(server.tree[ItemID("f")] == Self.file("renamed", in: ItemID("d"), "b2"))
        expectConverged()
    }

    @Test mutating func filesThatTradeNamesTradeThemEverywhere() {
        start(with: ["x": Self.file("a", "x"), "y": Self.file("b", "y")])
        a.disk[ItemID("x")]?.place.name = "b"
        a.disk[ItemID("y")]?.place.name = "a"
        settle()
        #expect(b.disk[ItemID("x")] == Self.file("b", "x") && b.disk[ItemID("y")] == Self.file("a", "y"))
        expectConverged()
    }

    @Test mutating func aFolderDeletedWhileTheOtherAddsToItComesBack() {
        start(with: ["d": Self.folder("d"), "old": Self.file("old", in: ItemID("d"), "o")])
        a.disk[ItemID("old")] = nil
        a.disk[ItemID("d")] = nil
        b.disk[ItemID("new")] = Self.file("new", in: ItemID("d"), "n")
        _ = a.sync(with: &server)
        settle()
        #expect(server.tree[ItemID("d")] == Self.folder("d"))
        #expect(server.tree[ItemID("new")] == Self.file("new", in: ItemID("d"), "n"))
        #expect(server.tree[ItemID("old")] == nil)
        expectConverged()
    }

    @Test mutating func foldersMovedIntoEachOtherDoNotMakeACycle() {
        start(with: ["p": Self.folder("p"), "q": Self.folder("q")])
        a.disk[ItemID("p")]?.place.parent = ItemID("q")
        b.disk[ItemID("q")]?.place.parent = ItemID("p")
        _ = b.sync(with: &server)
        settle()
        #expect(!server.tree.isWithin(ItemID("p"), ItemID("q")) || !server.tree.isWithin(ItemID("q"), ItemID("p")))
        #expect(server.tree.items.count == 2)
        expectConverged()
    }

    @Test mutating func theSameNewNameOnTwoDevicesBecomesOneItemWithBothVersions() {
        a.disk[ItemID("fromA")] = Self.file("report", "by A")
        b.disk[ItemID("fromB")] = Self.file("report", "by B")
        settle()
        #expect(server.tree.items.count == 1 && server.versions.isSuperset(of: ["by A", "by B"]))
        expectConverged()
    }

    @Test mutating func aDeleteReachesTheOtherDevice() {
        start(with: ["d": Self.folder("d"), "f": Self.file("f", in: ItemID("d"), "v1")])
        b.disk[ItemID("f")] = nil
        b.disk[ItemID("d")] = nil
        settle()
        #expect(a.disk.items.isEmpty && server.deleted.keys.sorted() == [ItemID("d"), ItemID("f")])
        expectConverged()
    }
}
