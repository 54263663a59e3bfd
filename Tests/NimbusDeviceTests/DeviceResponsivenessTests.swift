import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTestingCore
import Testing

/// The sync engine blocks threads all the time (scans, hashing, writes, syncs), and Swift's cooperative
/// threads (two on a 2-core machine) are the app's too when it embeds the daemon: rounds must leave them free.
@Suite(.cleansUp) struct DeviceResponsivenessTests {
    /// Two rounds at once, as a host syncing two containers runs them: one online over 20,000 new files (scan,
    /// hashing, uploads, commits), one offline over 20,000 more (scan, hashing, planning). Either would take a
    /// cooperative thread for seconds if it ran there; together they would take both.
    @Test func roundsOverTwentyThousandFilesLeaveTheCooperativePoolResponsive() async throws {
        let fixture = try await DeviceSyncTests.Fixture.make()
        var offline = try await fixture.server.signIn(email: "ann@example.com", device: "offline")
        offline.server = URL(string: "http://127.0.0.1:1")!  // nothing listens there
        let offlineRoot = TestResources.temporaryDirectory(prefix: "nimbus-device")
        try FileManager.default.createDirectory(at: offlineRoot, withIntermediateDirectories: true)
        let offlineFolder = offlineRoot.appendingPathComponent("Mobile Documents/iCloud~com~example~Cloudy")
        let offlineJournal = try DeviceJournal(path: offlineRoot.appendingPathComponent("journal.sqlite").path)
        let offlineEngine = SyncEngine(
            client: DocumentClient(
                client: NimbusClient(session: offline, apiToken: fixture.app.apiToken), container: fixture.app.container),
            folder: offlineFolder, journal: offlineJournal, device: "offline")
        let count = 20_000
        // The test's own writes stay off the cooperative threads too.
        try await DeviceExecutor.run {
            for folder in [fixture.a.folder, offlineFolder] {
                let documents = folder.appendingPathComponent("Documents")
                try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
                for index in 0..<count {
                    try Data("file \(index)\n".utf8).write(to: documents.appendingPathComponent("\(index).txt"))
                }
            }
        }
        let delays = try await withThrowingTaskGroup(of: [Duration]?.self) { group in
            group.addTask {
                try await fixture.a.engine.syncOnce()
                return nil
            }
            group.addTask {
                await #expect(throws: NimbusError.self) { try await offlineEngine.syncOnce() }
                return nil
            }
            group.addTask {
                // A task scheduled on the cooperative pool every few milliseconds while the rounds run: how long
                // each waited to start.
                var delays: [Duration] = []
                while !Task.isCancelled {
                    let scheduled = ContinuousClock.now
                    delays.append(await Task { ContinuousClock.now - scheduled }.value)
                    try? await Task.sleep(for: .milliseconds(5))
                }
                return delays
            }
            // The rounds: the probes end only when cancelled.
            _ = try await group.next()
            _ = try await group.next()
            group.cancelAll()
            return try await group.next().flatMap { $0 } ?? []
        }
        #expect(try await fixture.a.journal.syncedTree().items.count == count + 1, "the online round did not sync the folder")
        #expect(try await offlineJournal.localFiles().count == count + 1, "the offline round did not scan the folder")
        #expect(delays.count > 20, "the rounds were too short to probe")
        let worst = try #require(delays.max())
        #expect(worst < .milliseconds(50), "a task waited \(worst) for a cooperative thread during the rounds")
    }
}
