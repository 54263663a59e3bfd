import Crypto
import Foundation
import Logging
import NIOCore
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusServer
import NimbusTesting
import NimbusTestingCore
import Synchronization
import Testing

/// Two devices of one user, each a sync engine with its own folder and journal, against a real server
/// and against three behind a load balancer: the iCloud document tutorials end to end.
@Suite(.cleansUp) struct DeviceSyncTests {
    struct Device {
        let engine: SyncEngine
        let folder: URL
        let journal: DeviceJournal

        func write(_ path: String, _ text: String) throws {
            let url = folder.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }

        func read(_ path: String) -> String? {
            FileManager.default.contents(atPath: folder.appendingPathComponent(path).path).map {
                String(decoding: $0, as: UTF8.self)
            }
        }

        /// Every file under the folder, by relative path, with its text.
        func files() throws -> [String: String] {
            var found: [String: String] = [:]
            let enumerator = FileManager.default.enumerator(atPath: folder.path)
            while let path = enumerator?.nextObject() as? String {
                var isFolder: ObjCBool = false
                FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).path, isDirectory: &isFolder)
                found[path] = isFolder.boolValue ? "/" : read(path)
            }
            return found
        }
    }

    struct Fixture {
        let deployment: TestDeployment
        let app: TestServer.SeededApp
        let a: Device
        let b: Device
        let client: DocumentClient

        static func make(
            _ shape: TestDeployment.Shape = .oneNode,
            configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in }
        ) async throws -> Fixture {
            let deployment = try await TestDeployment.start(shape, configure: configure)
            let app = try await deployment.seedApp()
            let a = try await device("phone", deployment: deployment, app: app)
            let b = try await device("laptop", deployment: deployment, app: app)
            let session = try await deployment.signIn(email: "ann@example.com", device: "inspector")
            return Fixture(
                deployment: deployment, app: app, a: a, b: b,
                client: DocumentClient(client: NimbusClient(session: session, apiToken: app.apiToken), container: app.container))
        }

        /// Another device of the fixture's user, with a folder and journal of its own, reaching the server
        /// through `entry` when given (a relay in front of it).
        static func device(
            _ name: String, deployment: TestDeployment, app: TestServer.SeededApp, onDemand: Bool = false,
            through entry: URL? = nil
        ) async throws -> Device {
            var session = try await deployment.signIn(email: "ann@example.com", device: name)
            if let entry { session.server = entry }
            let root = TestResources.temporaryDirectory(prefix: "nimbus-device")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let folder = root.appendingPathComponent("Mobile Documents/iCloud~com~example~Cloudy")
            let journal = try DeviceJournal(path: root.appendingPathComponent("journal.sqlite").path)
            let client = DocumentClient(client: NimbusClient(session: session, apiToken: app.apiToken), container: app.container)
            return Device(
                engine: SyncEngine(client: client, folder: folder, journal: journal, device: name, downloadsOnDemand: onDemand),
                folder: folder, journal: journal)
        }

        /// Syncs both devices until neither has anything left to do.
        func settle() async throws {
            for _ in 0..<20 {
                let busyA = try await a.engine.syncOnce()
                let busyB = try await b.engine.syncOnce()
                if !busyA && !busyB { return }
            }
            Issue.record("the devices were still syncing after 20 rounds")
        }

        /// Every item the server holds, through as many pages of changes as it takes.
        func serverItems() async throws -> [DocumentItem] {
            var items: [DocumentItem] = []
            var token: String?
            while true {
                let page = try await client.changes(since: token)
                items += page.items
                guard page.moreComing else { return items }
                token = page.syncToken
            }
        }
    }

    @Test(arguments: TestDeployment.Shape.allCases) func aNoteSavedOnOneDeviceIsOnTheOther(shape: TestDeployment.Shape)
        async throws
    {
        let fixture = try await Fixture.make(shape)
        try fixture.a.write("Documents/Shopping.txt", "milk, eggs")
        try await fixture.settle()
        #expect(fixture.b.read("Documents/Shopping.txt") == "milk, eggs")
        try fixture.b.write("Documents/Shopping.txt", "milk, eggs, bread")
        try await fixture.settle()
        #expect(fixture.a.read("Documents/Shopping.txt") == "milk, eggs, bread")
        #expect(try fixture.a.files() == fixture.b.files())
    }

    /// A round's plan is run a batch at a time (200 steps to the server a request, 500 on the disk a slice): 600 new
    /// files go up in one round, three full batches, and come down on the other device in one round, a full slice and
    /// a part of one.
    @Test func aRoundOfMoreStepsThanOneBatchRunsEveryStep() async throws {
        let fixture = try await Fixture.make()
        for index in 0..<600 { try fixture.a.write("Documents/Notes/\(index).txt", "note \(index)") }
        try await fixture.a.engine.syncOnce()
        #expect(try await fixture.serverItems().count { $0.kind == .file } == 600)
        try await fixture.b.engine.syncOnce()
        #expect(try fixture.b.files() == fixture.a.files())
        #expect(try fixture.b.files().count == 602)  // the files and their two folders
    }

    @Test(arguments: TestDeployment.Shape.allCases) func bookmarksDeletedOnOneDeviceLeaveTheOtherForRecentlyDeleted(
        shape: TestDeployment.Shape
    ) async throws {
        let fixture = try await Fixture.make(shape)
        for site in ["swift.org", "apple.com", "example.com"] {
            try fixture.a.write("Documents/\(site).webloc", "https://\(site)")
        }
        try await fixture.settle()
        #expect(try fixture.b.files().keys.filter { $0.hasSuffix(".webloc") }.count == 3)
        try FileManager.default.removeItem(at: fixture.b.folder.appendingPathComponent("Documents/apple.com.webloc"))
        try await fixture.settle()
        #expect(fixture.a.read("Documents/apple.com.webloc") == nil)
        #expect(try await fixture.client.trash().items.map(\.name) == ["apple.com.webloc"])
        #expect(try fixture.a.files() == fixture.b.files())
    }

    @Test(arguments: TestDeployment.Shape.allCases) func airplaneModeEditsKeepBothVersionsFlaggedOnBothDevices(
        shape: TestDeployment.Shape
    ) async throws {
        let fixture = try await Fixture.make(shape)
        try fixture.a.write("Documents/Chapter.txt", "It was a dark night.")
        try await fixture.settle()
        try fixture.a.write("Documents/Chapter.txt", "It was a dark and stormy night.")  // offline
        try fixture.b.write("Documents/Chapter.txt", "It was a bright morning.")
        _ = try await fixture.b.engine.syncOnce()
        try await fixture.settle()
        let item = try #require(try await fixture.serverItems().first { $0.name == "Chapter.txt" })
        let texts = Set([item.current] + item.conflicts.map { Optional($0) }).compactMap { $0?.content.contentHash }
        #expect(texts.count == 2 && item.conflicts.count == 1, "both versions kept, one flagged as a conflict")
        for device in [fixture.a, fixture.b] {
            let remote = try await device.journal.remoteItem(ItemID(item.itemID))
            #expect(remote?.conflicts.count == 1, "the conflict is flagged on every device")
        }
        #expect(fixture.a.read("Documents/Chapter.txt") == fixture.b.read("Documents/Chapter.txt"))

        _ = try await fixture.client.modify([
            DocumentOperation(.resolve, itemID: item.itemID, versionIDs: item.conflicts.map(\.versionID))
        ])
        try await fixture.settle()
        for device in [fixture.a, fixture.b] {
            #expect(try await device.journal.remoteItem(ItemID(item.itemID))?.conflicts.isEmpty == true)
        }
    }

    /// The files and folders a round places are announced to the daemon's folder watcher (`OwnChanges`), so
    /// they do not wake another round that would find nothing to do.
    @Test func theFilesARoundPlacesAreAnnouncedToTheWatcher() async throws {
        let fixture = try await Fixture.make()
        try fixture.a.write("Documents/One.txt", "one")
        try fixture.a.write("Documents/Two.txt", "two")
        try await fixture.a.engine.sync()
        try await fixture.b.engine.syncOnce()
        #expect(fixture.b.read("Documents/One.txt") == "one" && fixture.b.read("Documents/Two.txt") == "two")
        // The folder's path with a slash after it: announced as a folder.
        let placed = Set(["One.txt", "Two.txt", ""].map { fixture.b.folder.path + "/Documents/" + $0 })
        #expect(fixture.b.engine.ownChanges.pending == placed, "nothing watched them here, so all are pending")
        try await fixture.b.engine.syncOnce()
        #expect(fixture.b.engine.ownChanges.pending.isEmpty, "the next round's scan makes them moot")
    }

    @Test(arguments: TestDeployment.Shape.allCases) func renamesAndMovesKeepTheItem(shape: TestDeployment.Shape) async throws {
        let fixture = try await Fixture.make(shape)
        try fixture.a.write("Documents/Draft.txt", "words")
        try await fixture.settle()
        let id = try #require(try await fixture.serverItems().first { $0.name == "Draft.txt" }?.itemID)
        try FileManager.default.createDirectory(
            at: fixture.a.folder.appendingPathComponent("Documents/Archive"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(
            at: fixture.a.folder.appendingPathComponent("Documents/Draft.txt"),
            to: fixture.a.folder.appendingPathComponent("Documents/Archive/Final.txt"))
        try await fixture.settle()
        #expect(fixture.b.read("Documents/Archive/Final.txt") == "words" && fixture.b.read("Documents/Draft.txt") == nil)
        #expect(try await fixture.serverItems().first { $0.name == "Final.txt" }?.itemID == id, "a move, not delete + create")
    }

    @Test(arguments: TestDeployment.Shape.allCases) func aSmallEditToALargeFileSendsOnlyTheChunksAroundIt(
        shape: TestDeployment.Shape
    ) async throws {
        let fixture = try await Fixture.make(shape)
        let (synced, url) = try await Self.syncedLargeFile(fixture, seed: 7)
        var bytes = synced
        #expect(
            FileManager.default.contents(atPath: fixture.b.folder.appendingPathComponent("Documents/Movie.bin").path) == bytes)
        let blobs = fixture.deployment.dataDirectory.appendingPathComponent("blobs")
        let before = try FileManager.default.contentsOfDirectory(atPath: blobs.path).count
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: url)
        try await fixture.settle()
        let added = try FileManager.default.contentsOfDirectory(atPath: blobs.path).count - before
        #expect((1...2).contains(added), "\(added) chunks uploaded for a one-byte edit")
        #expect(
            FileManager.default.contents(atPath: fixture.b.folder.appendingPathComponent("Documents/Movie.bin").path) == bytes)
    }

    /// A 12 MiB file of seeded random bytes (three or more chunks) written on A as `Documents/Movie.bin` and
    /// synced: its bytes and A's copy.
    private static func syncedLargeFile(_ fixture: Fixture, seed: UInt64) async throws -> (Data, URL) {
        var generator = SeededGenerator(seed: seed)
        let bytes = generator.bytes(12 << 20)
        let url = fixture.a.folder.appendingPathComponent("Documents/Movie.bin")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bytes.write(to: url)
        try await fixture.settle()
        return (bytes, url)
    }

    /// The other device takes what it already holds from its own copy: after a one-byte edit, the chunks
    /// the two versions share are gone from the server, and it still writes the new version whole (it
    /// could only have downloaded the chunk or two that changed).
    @Test func aSmallEditToALargeFileIsWrittenFromTheOtherDevicesOwnCopy() async throws {
        let fixture = try await Fixture.make()
        let (synced, url) = try await Self.syncedLargeFile(fixture, seed: 11)
        var bytes = synced
        var before = Set<String>()
        _ = try await FileContent.chunks(of: url) { _, hash in before.insert(hash) }
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: url)
        while try await fixture.a.engine.syncOnce() {}
        var after = Set<String>()
        _ = try await FileContent.chunks(of: url) { _, hash in after.insert(hash) }
        let shared = before.intersection(after)
        #expect(shared.count >= after.count - 2 && !shared.isEmpty, "\(shared.count) of \(after.count) chunks unchanged")
        let blobs = fixture.deployment.dataDirectory.appendingPathComponent("blobs")
        for hash in shared { try FileManager.default.removeItem(at: blobs.appendingPathComponent(hash)) }

        while try await fixture.b.engine.syncOnce() {}
        #expect(
            FileManager.default.contents(atPath: fixture.b.folder.appendingPathComponent("Documents/Movie.bin").path) == bytes)
    }

    /// A large file still being written is sent as it grows: the round that began on its first part reads on
    /// to its end, storing what was appended meanwhile, confirms the whole file (read again, unchanged) and
    /// saves it as one version; the journal holds the file as confirmed, so the next round has nothing to do, and
    /// the other device gets exactly its bytes.
    /// (Everything A sends stalls after its first 8 MB, its questions about chunks too, so the round is still
    /// reading the first part when the test appends: reading waits for each question's answer, and the first
    /// part is 96 MB, about 90 chunks.)
    @Test func aLargeFileStillBeingWrittenIsSentAsItGrows() async throws {
        let plain = try await Fixture.make()
        // A reaches the server through a relay that stalls its upload midway, while the test appends.
        let relay = try await HoldingRelay.start(to: plain.deployment.url.port!)
        let a = try await Fixture.device("tablet", deployment: plain.deployment, app: plain.app, through: relay.url)
        let fixture = Fixture(deployment: plain.deployment, app: plain.app, a: a, b: plain.b, client: plain.client)
        var generator = SeededGenerator(seed: 21)
        let (first, appended) = (generator.bytes(96 << 20), generator.bytes(8 << 20))
        let url = fixture.a.folder.appendingPathComponent("Export.mov")
        try FileManager.default.createDirectory(at: fixture.a.folder, withIntermediateDirectories: true)
        try first.write(to: url)

        relay.hold(after: 8 << 20)
        let round = Task { try await fixture.a.engine.syncOnce() }
        let client = fixture.client
        // Only chunk uploads are this large: A is uploading the first part.
        #expect(await eventually { relay.isHolding }, "A's upload stalled after its first 8 MB")
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: appended)
        try handle.close()
        relay.release()
        _ = try await round.value
        let whole = try FileContent.hash(of: url)
        let item = try #require(try await fixture.serverItems().first { $0.name == "Export.mov" })
        #expect(item.current?.content.contentHash == whole, "the first round saved the whole file")
        #expect(item.current?.content.size == Int64(first.count + appended.count))
        #expect(try await client.versions(of: item.itemID).history.isEmpty, "one version, the whole file")
        let local = try #require(try await fixture.a.journal.localFile(ItemID(item.itemID)))
        #expect(local.content == whole && local.size == Int64(first.count + appended.count))
        #expect(try await !fixture.a.engine.syncOnce(), "the next round finds the file as the journal holds it")

        try await fixture.settle()
        #expect(
            FileManager.default.contents(atPath: fixture.b.folder.appendingPathComponent("Export.mov").path) == first + appended)
    }

    /// The sequence a device has fetched up to, which its daemon weighs each push against (`DaemonWakes`), is in
    /// the pushes' own terms: after a sync that committed a change, it is the sequence the change's push carried,
    /// so that push (the device's own, come back to it) runs no round.
    @Test func theFetchedSequenceIsThePushesSequence() async throws {
        let fixture = try await Fixture.make()
        let pushed = Mutex<[Int64]>([])
        let listener = PushConnection(
            session: try await fixture.deployment.signIn(email: "ann@example.com", device: "listener"),
            logger: Logger(label: "test"),
            onConnect: {},
            onMessage: { message in
                if message.type == .zoneMoved, message.zone?.service.kind == .documents {
                    pushed.withLock { $0.append(message.sequence) }
                }
            })
        listener.start()
        defer { listener.stop() }
        #expect(await eventually { listener.isConnected })
        try await fixture.a.engine.sync()
        let before = try #require(await fixture.a.engine.fetchedSequence)
        try fixture.a.write("Documents/Note.txt", "words")
        try await fixture.a.engine.sync()
        #expect(await eventually { pushed.withLock { $0.contains { $0 > before } } })
        #expect(await fixture.a.engine.fetchedSequence == pushed.withLock { $0.max() })
    }

    /// A device uploading a large file announces its chunks as the server stores them, in order from the
    /// first, so that the other devices download them while the rest still uploads.
    @Test func aLargeFilesStoredChunksAreAnnouncedInOrder() async throws {
        let fixture = try await Fixture.make()
        let heard = Mutex<[ChunksAnnouncement]>([])
        let listener = PushConnection(
            session: try await fixture.deployment.signIn(email: "ann@example.com", device: "listener"),
            logger: Logger(label: "test"),
            onConnect: {},
            onMessage: { message in if let announced = message.announcement { heard.withLock { $0.append(announced) } } })
        listener.start()
        defer { listener.stop() }
        #expect(await eventually { listener.isConnected })
        let (_, url) = try await Self.syncedLargeFile(fixture, seed: 5)
        let saved = try #require(try await fixture.serverItems().first { $0.name == url.lastPathComponent }?.current?.content)
        #expect(await eventually { heard.withLock { $0 }.reduce(0) { $0 + $1.chunks.count } >= saved.chunks.count })
        var announced: [DocumentChunk] = []
        for announcement in heard.withLock({ $0 }) {
            #expect(announcement.from == announced.count, "announcements follow one another without a gap")
            announced += announcement.chunks
        }
        #expect(announced == saved.chunks)
    }

    /// A chunk downloaded into the buffer of one downloaded before it (`LargeDownload` fills them again) is
    /// its own bytes alone, whether the one before was larger or smaller; a chunk the server does not have is
    /// the same error as downloaded into a buffer of its own.
    @Test func aChunkDownloadedIntoAReusedBufferIsItsBytesAlone() async throws {
        let fixture = try await Fixture.make()
        func hash(_ bytes: Data) -> String { Secrets.hex(SHA256.hash(data: bytes)) }
        var generator = SeededGenerator(seed: 9)
        let (large, small) = (generator.bytes(300_000), generator.bytes(1_000))
        for bytes in [large, small] { try await fixture.client.upload(chunk: ByteBuffer(bytes: bytes), hash: hash(bytes)) }
        var buffer = try await fixture.client.download(chunk: hash(large), into: ByteBuffer(bytes: small))
        #expect(buffer == ByteBuffer(bytes: large))
        buffer = try await fixture.client.download(chunk: hash(small), into: buffer)
        #expect(buffer == ByteBuffer(bytes: small))
        let absent = hash(Data("never uploaded".utf8))
        let own = await #expect(throws: NimbusError.self) { try await fixture.client.download(chunk: absent) }
        let reused = await #expect(throws: NimbusError.self) {
            try await fixture.client.download(chunk: absent, into: ByteBuffer(bytes: large))
        }
        #expect(own?.code == reused?.code && reused?.code != .networkUnavailable)
    }

    /// A large file another device is uploading is downloaded while it uploads: the announced chunks are
    /// fetched before the version is saved (a file of the whole size waits at the folder's root), and the round
    /// that downloads the version places that very file. An announcement that disagrees with the one before
    /// (the file changed while it was sent) starts over, and what the first fetched is removed.
    @Test func aLargeFileAnnouncedWhileItUploadsIsDownloadedMeanwhile() async throws {
        let fixture = try await Fixture.make()
        let session = try await fixture.deployment.signIn(email: "ann@example.com", device: "laptop daemon")
        let daemon = DeviceDaemon(
            engine: fixture.b.engine, folder: fixture.b.folder, session: session, container: fixture.app.container,
            rescanInterval: .seconds(600), logger: Logger(label: "test"))
        let running = Task { try await daemon.run() }
        defer { running.cancel() }
        let client = fixture.client
        let scratch = TestResources.temporaryDirectory(prefix: "nimbus-announced")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        /// Uploads `size` seeded bytes' chunks as the uploading device would.
        func upload(seed: UInt64, size: Int) async throws -> (Data, DocumentContent) {
            var generator = SeededGenerator(seed: seed)
            let (bytes, file) = (generator.bytes(size), scratch.appendingPathComponent("\(seed)"))
            try bytes.write(to: file)
            var chunks: [DocumentChunk] = []
            let whole = try await FileContent.chunks(of: file) { chunk, hash in
                try await client.upload(chunk: ByteBuffer(bytes: chunk), hash: hash)
                chunks.append(DocumentChunk(hash: hash, size: Int64(chunk.count)))
            }
            return (bytes, DocumentContent(contentHash: whole, size: Int64(size), chunks: chunks, modifiedAt: 1_000))
        }
        /// The inode of the file of `size` bytes at B's folder's root under a name scans skip, if there is one.
        let folder = fixture.b.folder
        @Sendable func downloadedAhead(size: Int) -> UInt64? {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            for name in names where name.hasPrefix(DocumentNames.temporaryPrefix) {
                var status = stat()
                if stat(folder.appendingPathComponent(name).path, &status) == 0, status.st_size == size {
                    return UInt64(status.st_ino)
                }
            }
            return nil
        }
        /// Announces the version as the uploading device would, and waits for B to have fetched it.
        func announceAndAwaitFetch(_ content: DocumentContent) async throws -> UInt64? {
            for start in stride(from: 0, to: content.chunks.count, by: ChunksAnnouncement.maxChunks) {
                let run = Array(content.chunks[start..<min(content.chunks.count, start + ChunksAnnouncement.maxChunks)])
                try await client.announce("movie", from: start, chunks: run)
            }
            _ = await eventually { downloadedAhead(size: Int(content.size)) != nil }
            return downloadedAhead(size: Int(content.size))
        }
        // B's push socket must be registered for it to hear the announcements.
        #expect(await eventually { fixture.deployment.pushConnectionCount == 1 })

        let (_, first) = try await upload(seed: 1, size: 10 << 20)
        let firstFetched = try await announceAndAwaitFetch(first)
        #expect(firstFetched != nil, "the first announced version was fetched before it was saved")
        let (bytes, second) = try await upload(seed: 2, size: 12 << 20)
        let fetched = try #require(try await announceAndAwaitFetch(second), "the changed file was fetched over")
        #expect(await eventually { downloadedAhead(size: Int(first.size)) == nil }, "the first one's file was removed")

        let saved = try await client.modify([
            DocumentOperation(.save, itemID: "movie", name: "Movie.bin", kind: .file, content: second)
        ])
        #expect(saved.results.first?.outcome == .applied)
        let placed = fixture.b.folder.appendingPathComponent("Movie.bin")
        #expect(await eventually { FileManager.default.contents(atPath: placed.path) == bytes })
        var status = stat()
        #expect(stat(placed.path, &status) == 0 && UInt64(status.st_ino) == fetched, "the file fetched ahead is the one placed")
    }

    /// Two names one letter's case apart are two files on this disk but one name on the server (and on
    /// Apple's and Windows' disks): the second is renamed as Finder would, and both reach the other device.
    @Test(arguments: TestDeployment.Shape.allCases) func namesThatDifferOnlyByCaseAreBothKept(shape: TestDeployment.Shape)
        async throws
    {
        let fixture = try await Fixture.make(shape)
        try fixture.a.write("Documents/Notes.txt", "upper")
        try fixture.a.write("Documents/notes.txt", "lower")
        try await fixture.settle()
        let texts = Set(try fixture.b.files().filter { $0.key.hasPrefix("Documents/") && $0.value != "/" }.values)
        #expect(texts == ["upper", "lower"], "both contents kept")
        #expect(fixture.b.read("Documents/Notes.txt") == "upper" && fixture.b.read("Documents/notes 2.txt") == "lower")
        #expect(try fixture.a.files() == fixture.b.files())
    }

    /// A new name that differs only by case from a synced one: the synced file keeps its name, though the new one
    /// comes first by name, and the new one is numbered.
    @Test func theSyncedNameIsKeptWhenANewOneCollidesWithIt() async throws {
        let fixture = try await Fixture.make()
        try fixture.a.write("Documents/notes.txt", "synced first")
        try await fixture.settle()
        try fixture.a.write("Documents/Notes.txt", "new")
        try await fixture.settle()
        #expect(fixture.b.read("Documents/notes.txt") == "synced first" && fixture.b.read("Documents/Notes 2.txt") == "new")
        #expect(try fixture.a.files() == fixture.b.files())
    }

    /// The daemons, not the test, decide when to sync: a file written into one folder reaches the other
    /// through inotify, the server and the push socket.
    /// A folder and a file of one 255-byte name on two devices: the file steps aside and is numbered within
    /// the limit, and both devices end with both.
    @Test(arguments: TestDeployment.Shape.allCases) func namesAtTheLengthLimitAreBothKept(shape: TestDeployment.Shape)
        async throws
    {
        let fixture = try await Fixture.make(shape)
        let name = String(repeating: "n", count: 251) + ".txt"
        try fixture.a.write("Documents/Readme.txt", "both devices share Documents")
        try await fixture.settle()
        try FileManager.default.createDirectory(
            at: fixture.a.folder.appendingPathComponent("Documents/\(name)"), withIntermediateDirectories: true)
        try fixture.a.write("Documents/\(name)/inside.txt", "in the folder")
        try fixture.b.write("Documents/\(name)", "the file")
        try await fixture.settle()
        let numbered = String(repeating: "n", count: 249) + " 2.txt"
        for device in [fixture.a, fixture.b] {
            #expect(device.read("Documents/\(name)/inside.txt") == "in the folder")
            #expect(device.read("Documents/\(numbered)") == "the file")
        }
    }

    @Test(arguments: TestDeployment.Shape.allCases) func daemonsSyncOnTheirOwn(shape: TestDeployment.Shape) async throws {
        let fixture = try await Fixture.make(shape)
        var daemons: [Task<Void, any Error>] = []
        for (device, name) in [(fixture.a, "phone"), (fixture.b, "laptop")] {
            let session = try await fixture.deployment.signIn(email: "ann@example.com", device: name + " daemon")
            let daemon = DeviceDaemon(
                engine: device.engine, folder: device.folder, session: session, container: fixture.app.container,
                rescanInterval: .seconds(600), logger: Logger(label: "test"))
            daemons.append(Task { try await daemon.run() })
        }
        defer { for daemon in daemons { daemon.cancel() } }
        try fixture.a.write("Documents/From A.txt", "hello from A")
        #expect(try await eventually { fixture.b.read("Documents/From A.txt") == "hello from A" })
        try fixture.b.write("Documents/From B.txt", "hello from B")
        #expect(try await eventually { fixture.a.read("Documents/From B.txt") == "hello from B" })
    }
}
