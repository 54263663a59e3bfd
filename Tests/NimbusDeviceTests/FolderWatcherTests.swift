import Foundation
import NimbusCore
import NimbusDevice
import NimbusTestingCore
import Synchronization
import Testing

/// What wakes a daemon: changes a scan would see, not the engine's own placements nor temporary files.
@Suite(.cleansUp) struct FolderWatcherTests {
    /// A watched folder holding `Documents`, the announcements its watcher passes over, and how many times
    /// it woke.
    private final class WatchedFolder: Sendable {
        let folder = TestResources.temporaryDirectory()
        let own = OwnChanges()
        let counted = WakeCount()
        let watcher: FolderWatcher

        var wakes: Int { counted.value.withLock { $0 } }

        init() throws {
            try FileManager.default.createDirectory(
                at: folder.appendingPathComponent("Documents"), withIntermediateDirectories: true)
            let counted = counted
            watcher = try FolderWatcher(ignoring: own) { counted.value.withLock { $0 += 1 } }
            watcher.watch(folder)
        }

        deinit { watcher.stop() }
    }

    private final class WakeCount: Sendable {
        let value = Mutex(0)
    }

    @Test func filesTheEngineAnnouncedWakeNothingButAnAppsEditDoes() async throws {
        let watched = try WatchedFolder()
        let (folder, own) = (watched.folder, watched.own)
        // As the engine places downloads: written under a temporary name, announced, renamed into place.
        for name in ["First.txt", "Second.txt"] {
            let temporary = folder.appendingPathComponent(DocumentNames.temporaryPrefix + "download-" + name)
            try Data("from the server".utf8).write(to: temporary)
            let target = folder.appendingPathComponent("Documents/" + name)
            own.expect(target.path)
            #expect(rename(temporary.path, target.path) == 0)
            #expect(await eventually { own.pending.isEmpty }, "the watcher met the announcement")
        }
        // The watcher reads its events in order on one thread: once it met the second announcement, whatever
        // the first placement's events made it do is done.
        #expect(watched.wakes == 0)

        // An app's edit of a placed file is a change.
        try Data("edited by an app".utf8).write(to: folder.appendingPathComponent("Documents/First.txt"))
        #expect(await eventually { watched.wakes >= 1 })
    }

    /// A folder the engine makes (a folder item downloaded) wakes nothing; a file made under that name, or
    /// another folder, does.
    @Test func foldersTheEngineAnnouncedWakeNothingButAnAppsDo() async throws {
        let watched = try WatchedFolder()
        let (folder, own) = (watched.folder, watched.own)
        let made = folder.appendingPathComponent("Documents/Made").path
        own.expectFolder(made)
        #expect(mkdir(made, 0o755) == 0)
        #expect(await eventually { own.pending.isEmpty }, "the watcher met the announcement")
        #expect(watched.wakes == 0)

        // Announced as a folder, made as a file: an app's.
        let file = folder.appendingPathComponent("Documents/Expected").path
        own.expectFolder(file)
        try Data("an app's".utf8).write(to: URL(fileURLWithPath: file))
        #expect(await eventually { watched.wakes >= 1 })
        #expect(own.takeFolder(file), "a file's events do not use up a folder's announcement")

        // A folder nothing announced.
        let before = watched.wakes
        #expect(mkdir(folder.appendingPathComponent("Documents/By an app").path, 0o755) == 0)
        #expect(await eventually { watched.wakes > before })
    }

    @Test func aRenameTheEngineDidNotAnnounceWakesTheDaemon() async throws {
        let watched = try WatchedFolder()
        let (folder, own) = (watched.folder, watched.own)
        let saved = folder.appendingPathComponent(DocumentNames.temporaryPrefix + "save-1")
        try Data("saved by an app".utf8).write(to: saved)
        // An app saving through a temporary file: announced for another path, so this one is the app's.
        let placed = folder.appendingPathComponent("Documents/Other.txt").path
        own.expect(placed)
        #expect(rename(saved.path, folder.appendingPathComponent("Documents/Saved.txt").path) == 0)
        #expect(await eventually { watched.wakes >= 1 })
        #expect(own.pending == [placed], "another file's announcement is kept for it")
    }
}
