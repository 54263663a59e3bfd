import Crypto
import Foundation
import NIOCore
import NimbusCore
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// `nimbus device run` on two device roots, and `nimbus docs`, as a user runs them.
@Suite(.cleansUp) struct DocumentCommandLineTests {
    struct Device {
        var name: String
        var config: String
        var root: URL
        var folder: URL { root.appendingPathComponent("Mobile Documents/iCloud~com~example~Cloudy") }
        var run: [String] { ["device", "run", "--config", config, "--root", root.path] }
    }

    /// Signs up one user and signs each device in with the app's API token and container.
    static func devices(_ names: [String], server: TestServer, app: TestServer.SeededApp) async throws -> [Device] {
        let signup = try await CommandLineTests.run(
            ["signup", "--email", "ann@example.com", "--password", TestServer.password], server: server)
        #expect(signup.status == 0, "\(signup.stderr)")
        var devices: [Device] = []
        for name in names {
            let device = Device(name: name, config: TestServer.temporaryDirectory().path, root: TestServer.temporaryDirectory())
            let login = try await CommandLineTests.run(
                [
                    "login", "--config", device.config, "--email", "ann@example.com", "--password", TestServer.password,
                    "--device-name", name, "--api-token", app.apiToken, "--container", app.container,
                ], server: server)
            #expect(login.status == 0, "\(login.stderr)")
            devices.append(device)
        }
        return devices
    }

    static func inspector(_ server: TestServer, _ app: TestServer.SeededApp) async throws -> DocumentClient {
        DocumentClient(
            client: NimbusClient(
                session: try await server.signIn(email: "ann@example.com", device: "inspector"), apiToken: app.apiToken),
            container: app.container)
    }

    static func movie(seed: UInt64) -> Data {
        var generator = SeededGenerator(seed: seed)
        return generator.bytes(16 << 20)
    }

    @Test func twoDaemonsMirrorAFolderAndTheCLIListsIt() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let devices = try await Self.devices(["phone", "laptop"], server: server, app: app)
        let folders = devices.map { $0.folder.appendingPathComponent("Documents") }
        let phone = try CommandLineTests.process(devices[0].run, server: server)
        let laptop = try CommandLineTests.process(devices[1].run, server: server)
        _ = try await phone.whileRunning { _ in
            _ = try await laptop.whileRunning { _ in
                try FileManager.default.createDirectory(at: folders[0], withIntermediateDirectories: true)
                try Data("Chapter one.".utf8).write(to: folders[0].appendingPathComponent("Novel.txt"))
                let arrived = folders[1].appendingPathComponent("Novel.txt")
                #expect(
                    await eventually(timeout: .seconds(60)) {
                        FileManager.default.contents(atPath: arrived.path) == Data("Chapter one.".utf8)
                    })
            }
        }
        let list = try await CommandLineTests.run(["docs", "ls", "--config", devices[1].config], server: server)
        #expect(list.status == 0 && list.stdout.contains("Documents/Novel.txt\t12"), "\(list.stdout)\(list.stderr)")
        let versions = try await CommandLineTests.run(
            ["docs", "versions", "--config", devices[1].config, "Documents/Novel.txt", "--json"], server: server)
        #expect(versions.status == 0 && versions.stdout.contains(#""history":[]"#), "\(versions.stdout)\(versions.stderr)")
        let missing = try await CommandLineTests.run(
            ["docs", "versions", "--config", devices[1].config, "Nope.txt"], server: server)
        #expect(missing.status != 0 && missing.stderr.contains("no document at Nope.txt"))
    }

    /// `nimbus device status` asks the running daemon through its owner-only socket; with no daemon it says
    /// so at once, and a second daemon for the same root is refused.
    @Test func deviceStatusAnswersThroughTheControlSocket() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let phone = try await Self.devices(["phone"], server: server, app: app)[0]
        let status = ["device", "status", "--root", phone.root.path]
        let none = try await CommandLineTests.run(status, server: server)
        #expect(none.status != 0 && none.stderr.contains("no nimbus device daemon serves \(phone.root.path)"), "\(none.stderr)")
        let nowhere = try await CommandLineTests.run(["device", "status", "/"], server: server)
        #expect(nowhere.status != 0 && nowhere.stderr.contains("no device root above /"), "\(nowhere.stderr)")

        let daemon = try CommandLineTests.process(phone.run, server: server)
        _ = try await daemon.whileRunning { _ in
            let socket = phone.root.appendingPathComponent(".nimbus/control.sock")
            #expect(await eventually(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: socket.path) })
            let mode = { (path: String) in
                ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int ?? 0) & 0o777
            }
            #expect(mode(socket.path) == 0o600 && mode(socket.deletingLastPathComponent().path) == 0o700)

            let second = try await CommandLineTests.run(phone.run, server: server)
            #expect(second.status != 0 && second.stderr.contains("another nimbus device daemon serves"), "\(second.stderr)")

            let file = phone.folder.appendingPathComponent("Documents/Letter.txt")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("Dear Ann,".utf8).write(to: file)
            // The root is found above the path, as when run from inside the folder.
            #expect(
                await eventually(timeout: .seconds(30)) {
                    let answer = try? await CommandLineTests.run(["device", "status", file.path], server: server)
                    return answer?.stdout == "Documents/Letter.txt: synced\n"
                })
            let whole = try await CommandLineTests.run(status + ["--json"], server: server)
            let folder = try JSONDecoder().decode(ControlResponseShape.self, from: Data(whole.stdout.utf8)).folders?.first
            #expect(folder?.pending == 0 && folder?.conflicts == 0 && folder?.folder == phone.folder.path, "\(whole.stdout)")
            let excluded = try await CommandLineTests.run(
                status + [phone.folder.appendingPathComponent("Documents/build.nosync").path], server: server)
            #expect(excluded.stdout.contains("excluded: names ending in .nosync are not synced"), "\(excluded.stdout)")

            let evict = try await CommandLineTests.run(["docs", "evict", file.path, "--json"], server: server)
            #expect(evict.status == 0 && evict.stdout.contains(#""state":"notDownloaded""#), "\(evict.stdout)\(evict.stderr)")
            #expect(!FileManager.default.fileExists(atPath: file.path))
            let download = try await CommandLineTests.run(["docs", "download", file.path], server: server)
            #expect(
                download.status == 0 && download.stdout == "Documents/Letter.txt: synced\n",
                "\(download.stdout)\(download.stderr)")
            #expect(FileManager.default.contents(atPath: file.path) == Data("Dear Ann,".utf8))
        }
    }

    /// One daemon mirrors every container the device holds a token for, each in its own folder, and the
    /// root's socket answers for all of them.
    @Test func oneDaemonMirrorsEveryContainerItWasGiven() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let notes = try await server.seedApp(bundleID: "com.example.Notes")
        let phone = try await Self.devices(["phone"], server: server, app: app)[0]
        let refused = try await CommandLineTests.run(
            ["device", "add", "--config", phone.config, "--container", notes.container, "--api-token", app.apiToken],
            server: server)
        #expect(refused.status != 0 && refused.stderr.contains("cannot be mirrored with that token"), "\(refused.stderr)")
        let added = try await CommandLineTests.run(
            ["device", "add", "--config", phone.config, "--container", notes.container, "--api-token", notes.apiToken],
            server: server)
        #expect(added.status == 0 && added.stdout.contains(notes.container), "\(added.stdout)\(added.stderr)")

        let notesFolder = phone.root.appendingPathComponent("Mobile Documents/iCloud~com~example~Notes/Documents")
        let daemon = try CommandLineTests.process(phone.run, server: server)
        _ = try await daemon.whileRunning { _ in
            for folder in [phone.folder.appendingPathComponent("Documents"), notesFolder] {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Data("hello".utf8).write(to: folder.appendingPathComponent("Hello.txt"))
            }
            for (client, name) in [
                (try await Self.inspector(server, app), "Cloudy"),
                (
                    DocumentClient(
                        client: NimbusClient(
                            session: try await server.signIn(email: "ann@example.com", device: "inspector"),
                            apiToken: notes.apiToken),
                        container: notes.container), "Notes"
                ),
            ] {
                #expect(
                    await eventually(timeout: .seconds(30)) {
                        (try? await client.changes(since: nil).items.contains { $0.name == "Hello.txt" }) == true
                    }, "\(name)'s file reached its container")
            }
            let status = try await CommandLineTests.run(
                ["device", "status", "--root", phone.root.path, "--json"], server: server)
            let folders = try JSONDecoder().decode(ControlResponseShape.self, from: Data(status.stdout.utf8)).folders ?? []
            #expect(folders.map(\.folder).sorted() == [phone.folder.path, notesFolder.deletingLastPathComponent().path].sorted())
            let one = try await CommandLineTests.run(
                ["device", "status", notesFolder.appendingPathComponent("Hello.txt").path], server: server)
            #expect(one.stdout == "Documents/Hello.txt: synced\n", "\(one.stdout)\(one.stderr)")
        }
    }

    /// `kill -9` of the daemon while it uploads a large file: restarted, it finishes the upload, the
    /// other device gets the file whole, and the server holds one version of it.
    @Test func aDaemonKilledMidUploadFinishesWithoutLossOrDuplicates() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let devices = try await Self.devices(["phone", "laptop"], server: server, app: app)
        try FileManager.default.createDirectory(at: devices[0].folder, withIntermediateDirectories: true)
        let bytes = Self.movie(seed: 9)
        try bytes.write(to: devices[0].folder.appendingPathComponent("Film.mov"))
        let blobs = server.dataDirectory.appendingPathComponent("blobs")
        let chunksStored: @Sendable () -> Int = { (try? FileManager.default.contentsOfDirectory(atPath: blobs.path).count) ?? 0 }
        _ = try? await CommandLineTests.process(devices[0].run, server: server).whileRunning { printed in
            #expect(await eventually(timeout: .seconds(60)) { chunksStored() >= 3 }, "the upload started")
            kill(printed.processID, SIGKILL)
        }
        let client = try await Self.inspector(server, app)
        #expect(try await client.changes(since: nil).items.isEmpty, "killed before the commit")
        _ = try await CommandLineTests.process(devices[0].run, server: server).whileRunning { _ in
            _ = try await CommandLineTests.process(devices[1].run, server: server).whileRunning { _ in
                let arrived = devices[1].folder.appendingPathComponent("Film.mov")
                #expect(
                    await eventually(timeout: .seconds(60)) { FileManager.default.contents(atPath: arrived.path) == bytes })
            }
        }
        let items = try await client.changes(since: nil).items
        try #require(items.count == 1)
        #expect(items[0].conflicts.isEmpty)
        #expect(try await client.versions(of: items[0].itemID).history.isEmpty, "one version, not a duplicate")
    }

    /// `kill -9` of the daemon while it downloads: the file's name never shows part of it, and the
    /// restarted daemon finishes and clears its temporary file.
    @Test func aDaemonKilledMidDownloadNeverLeavesAPartialFile() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let devices = try await Self.devices(["phone", "laptop"], server: server, app: app)
        try FileManager.default.createDirectory(at: devices[0].folder, withIntermediateDirectories: true)
        let bytes = Self.movie(seed: 10)
        try bytes.write(to: devices[0].folder.appendingPathComponent("Film.mov"))
        let client = try await Self.inspector(server, app)
        _ = try await CommandLineTests.process(devices[0].run, server: server).whileRunning { _ in
            #expect(await eventually(timeout: .seconds(60)) { (try? await client.changes(since: nil).items.count) == 1 })
        }
        let target = devices[1].folder.appendingPathComponent("Film.mov")
        let folder = devices[1].folder
        let downloading: @Sendable () -> Bool = {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return names.contains { name in
                name.hasPrefix(".nimbus-")
                    && ((try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size])
                        as? Int ?? 0) > 0
            }
        }
        _ = try? await CommandLineTests.process(devices[1].run, server: server).whileRunning { printed in
            #expect(await eventually(timeout: .seconds(60)) { downloading() }, "the download started")
            kill(printed.processID, SIGKILL)
        }
        let seen = FileManager.default.contents(atPath: target.path)
        #expect(seen == nil || seen == bytes, "the file's name holds nothing or all of it")
        _ = try await CommandLineTests.process(devices[1].run, server: server).whileRunning { _ in
            #expect(await eventually(timeout: .seconds(60)) { FileManager.default.contents(atPath: target.path) == bytes })
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".nimbus-") }
        #expect(left.isEmpty, "temporary files are cleared: \(left)")
    }

    /// `nimbus docs` without a daemon: put, get, mv, rm and Recently Deleted, versions and restore,
    /// conflicts and resolve.
    @Test func docsCommandsManageDocumentsDirectly() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let device = try await Self.devices(["laptop"], server: server, app: app)[0]
        func nimbus(_ arguments: String...) async throws -> ChildProcess.Output {
            let output = try await CommandLineTests.run(Array(arguments) + ["--config", device.config], server: server)
            #expect(output.status == 0, "\(arguments): \(output.stderr)")
            return output
        }
        let work = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let first = work.appendingPathComponent("first.txt")
        try Data("first draft".utf8).write(to: first)
        _ = try await nimbus("docs", "put", first.path, "Documents/Essays/Essay.txt")
        try Data("second draft".utf8).write(to: first)
        _ = try await nimbus("docs", "put", first.path, "Documents/Essays/Essay.txt")
        #expect(try await nimbus("docs", "ls").stdout.contains("Documents/Essays/Essay.txt\t12"))

        // Over 1 MB: a progress line on a terminal (script(1) gives the command one), none when piped.
        var generator = SeededGenerator(seed: 17)
        let album = work.appendingPathComponent("album.bin")
        try generator.bytes(3 << 20).write(to: album)
        let piped = try await nimbus("docs", "put", album.path, "Documents/Album.bin")
        #expect(!piped.stderr.contains("MB/s"), "\(piped.stderr)")
        let command = try
            ([
                CommandLineTests.executable.path, "docs", "get", "Documents/Album.bin", album.path + ".copy", "--config",
                device.config,
            ])
            .map { "'" + $0 + "'" }.joined(separator: " ")
        let terminal = try await ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/script"), arguments: ["-qec", command, "/dev/null"],
            environment: CommandLineTests.environment(server: server.url.absoluteString)
        ).run()
        #expect(
            terminal.status == 0 && terminal.stdout.contains("down [####################] 3.1 / 3.1 MB"), "\(terminal.stdout)")
        #expect(FileManager.default.contents(atPath: album.path + ".copy") == FileManager.default.contents(atPath: album.path))

        let copy = work.appendingPathComponent("copy.txt")
        _ = try await nimbus("docs", "get", "Documents/Essays/Essay.txt", copy.path)
        #expect(FileManager.default.contents(atPath: copy.path) == Data("second draft".utf8))

        let versions = try JSONDecoder().decode(
            DocumentVersionsResponse.self,
            from: Data(try await nimbus("docs", "versions", "Documents/Essays/Essay.txt", "--json").stdout.utf8))
        let earlier = try #require(versions.history.first?.versionID)
        _ = try await nimbus("docs", "restore", "Documents/Essays/Essay.txt", "--version", earlier)
        _ = try await nimbus("docs", "get", "Documents/Essays/Essay.txt", copy.path)
        #expect(FileManager.default.contents(atPath: copy.path) == Data("first draft".utf8))

        _ = try await nimbus("docs", "mv", "Documents/Essays/Essay.txt", "Documents/Final.txt")
        #expect(try await nimbus("docs", "ls", "Documents/Final.txt").stdout.hasPrefix("Documents/Final.txt"))
        _ = try await nimbus("docs", "rm", "Documents/Final.txt")
        #expect(try await nimbus("docs", "trash").stdout.contains("Final.txt"))
        _ = try await nimbus("docs", "trash", "restore", "Final.txt")
        #expect(try await nimbus("docs", "ls").stdout.contains("Documents/Final.txt"))

        // Two saves on one base: a conflict, resolved by keeping the conflict version.
        let client = try await Self.inspector(server, app)
        let item = try #require(try await client.changes(since: nil).items.first { $0.name == "Final.txt" })
        let other = Data("edited elsewhere".utf8)
        let hash = SHA256.hash(data: other).map { String(format: "%02x", $0) }.joined()
        try await client.upload(chunk: ByteBuffer(bytes: other), hash: hash)
        _ = try await client.modify([
            DocumentOperation(
                .save, itemID: item.itemID, parentID: item.parentID, name: item.name, kind: .file,
                baseContentHash: SHA256.hash(data: Data("old base".utf8)).map { String(format: "%02x", $0) }.joined(),
                content: DocumentContent(
                    contentHash: hash, size: Int64(other.count), chunks: [DocumentChunk(hash: hash, size: Int64(other.count))],
                    modifiedAt: 1))
        ])
        #expect(try await nimbus("docs", "conflicts").stdout.contains("Documents/Final.txt"))
        let conflict = try #require(
            try await client.changes(since: nil).items.first { $0.itemID == item.itemID }?.conflicts.first)
        _ = try await nimbus("docs", "resolve", "Documents/Final.txt", "--keep", conflict.versionID)
        #expect(try await nimbus("docs", "conflicts").stdout.isEmpty)
        _ = try await nimbus("docs", "get", "Documents/Final.txt", copy.path)
        #expect(FileManager.default.contents(atPath: copy.path) == other)
    }
}

/// What a script reads from `nimbus device status --json`.
private struct ControlResponseShape: Decodable {
    struct Folder: Decodable {
        var folder: String
        var pending: Int
        var conflicts: Int
    }
    var folders: [Folder]?
}
