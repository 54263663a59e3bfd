import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// `Examples/Notes` and `Examples/Bookmarks` as a user runs them: two `nimbus device run` daemons on two
/// roots, each app run against one root as if on that device.
@Suite(.cleansUp) struct ExampleAppTests {
    /// An example program built beside `nimbus`.
    static func example(_ name: String, _ arguments: [String]) throws -> ChildProcess {
        ChildProcess(
            executable: try CommandLineTests.executable.deletingLastPathComponent().appendingPathComponent(name),
            arguments: arguments, environment: CommandLineTests.environment(server: nil))
    }

    static func run(_ name: String, _ arguments: [String]) async throws -> ChildProcess.Output {
        try await example(name, arguments).run()
    }

    /// Runs `body` while both devices' daemons run, once each has finished its first round.
    static func withDaemons(
        _ devices: [DocumentCommandLineTests.Device], server: TestServer, _ body: () async throws -> Void
    ) async throws {
        let first = try CommandLineTests.process(devices[0].run, server: server)
        let second = try CommandLineTests.process(devices[1].run, server: server)
        _ = try await first.whileRunning { firstPrinted in
            _ = try await second.whileRunning { secondPrinted in
                for (device, printed) in zip(devices, [firstPrinted, secondPrinted]) {
                    #expect(
                        await eventually(timeout: .seconds(30)) {
                            await UbiquityDevice(root: device.root).ubiquityContainerURL(forIdentifier: nil) != nil
                        }, "the daemon serves its root; it printed: \(printed.errors)")
                }
                try await body()
            }
        }
    }

    /// The notes tutorial, conflict chapter included: a note made on one device is read and followed on the
    /// other; with the server out of reach both edit it; when it is back both say `inConflict`, the laptop
    /// lists the two versions and keeps the phone's, and both are back to normal with that text.
    @Test func theNotesTutorialWithItsConflictChapter() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let devices = try await DocumentCommandLineTests.devices(["phone", "laptop"], server: server, app: app)
        let (phone, laptop) = (["--root", devices[0].root.path], ["--root", devices[1].root.path])
        @Sendable func show(_ root: [String]) async throws -> String {
            try await Self.run("Notes", root + ["show", "Story"]).stdout
        }

        try await Self.withDaemons(devices, server: server) {
            let created = try await Self.run("Notes", phone + ["new", "Story", "Once upon a time."])
            #expect(created.status == 0, "\(created.stderr)")
            #expect(await eventually(timeout: .seconds(30)) { (try? await show(laptop)) == "Once upon a time.\n[normal]\n" })

            // Watching on the laptop: the phone's edit shows up there on its own.
            let watcher = try Self.example("Notes", laptop + ["watch", "Story"])
            _ = try await watcher.whileRunning { printed in
                #expect(await eventually(timeout: .seconds(30)) { printed.value.contains("Once upon a time. [normal]") })
                let edited = try await Self.run("Notes", phone + ["edit", "Story", "Once upon a time, twice."])
                #expect(edited.status == 0, "\(edited.stderr)")
                #expect(
                    await eventually(timeout: .seconds(30)) { printed.value.contains("Once upon a time, twice. [normal]") },
                    "\(printed.value)")
            }
            let listed = try await Self.run("Notes", phone + ["list"])
            #expect(listed.stdout == "Story\tcurrent\n", "\(listed.stdout)\(listed.stderr)")

            // Offline: the server out of reach, the laptop edits, then the phone.
            await server.stop()
            let offline = try await Self.run("Notes", laptop + ["edit", "Story", "The laptop's ending."])
            #expect(offline.status == 0, "an app edits while its device is offline: \(offline.stderr)")
            let later = try await Self.run("Notes", phone + ["edit", "Story", "The phone's ending."])
            #expect(later.status == 0, "\(later.stderr)")
            let back = try await TestServer.start(dataDirectory: server.dataDirectory, port: server.port)
            defer { Task { await back.stop() } }

            for root in [phone, laptop] {
                #expect(
                    await eventually(timeout: .seconds(60)) { (try? await show(root))?.hasSuffix("[inConflict]\n") == true },
                    "both devices see the conflict")
            }
            let conflicts = try await Self.run("Notes", laptop + ["conflicts", "Story"])
            let lines = conflicts.stdout.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            #expect(lines.count == 2 && lines[0][0] == "current" && lines[1][0] == "conflict", "\(conflicts.stdout)")
            let phoneVersion = try #require(lines.first { $0.count > 2 && $0[2] == "phone" }, "\(conflicts.stdout)")
            let kept = try await Self.run(
                "Notes", laptop + ["keep", "Story", phoneVersion[0] == "current" ? "current" : phoneVersion[1]])
            #expect(kept.status == 0, "\(kept.stderr)")
            for root in [phone, laptop] {
                #expect(
                    await eventually(timeout: .seconds(60)) { (try? await show(root)) == "The phone's ending.\n[normal]\n" },
                    "both back to normal with the version kept")
            }
        }
    }

    /// The bookmarks tutorial: one device adds and deletes, the other's live list follows.
    @Test func theBookmarksTutorial() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let devices = try await DocumentCommandLineTests.devices(["phone", "laptop"], server: server, app: app)
        let (phone, laptop) = (["--root", devices[0].root.path], ["--root", devices[1].root.path])
        try await Self.withDaemons(devices, server: server) {
            let watcher = try Self.example("Bookmarks", laptop + ["watch"])
            _ = try await watcher.whileRunning { printed in
                #expect(await eventually(timeout: .seconds(30)) { printed.value.contains("0 bookmarks") })
                let added = try await Self.run("Bookmarks", phone + ["add", "Swift", "https://swift.org"])
                #expect(added.status == 0, "\(added.stderr)")
                #expect(
                    await eventually(timeout: .seconds(30)) { printed.value.contains("  Swift\thttps://swift.org") },
                    "\(printed.value)")
                let deleted = try await Self.run("Bookmarks", phone + ["delete", "Swift"])
                #expect(deleted.status == 0, "\(deleted.stderr)")
                #expect(
                    await eventually(timeout: .seconds(30)) { printed.value.contains("removed [\"Swift\"]") }, "\(printed.value)")
            }
            let listed = try await Self.run("Bookmarks", laptop + ["list"])
            #expect(listed.stdout == "0 bookmarks\n", "\(listed.stdout)\(listed.stderr)")
        }
    }
}
