import Foundation
import NimbusTesting
import Testing

/// The sync engine blocks threads all the time (scans, hashing, writes, syncs), and Swift's cooperative threads
/// (two on a 2-core machine) are the app's too when it embeds the daemon: rounds must leave them free.
@Suite(.cleansUp) struct DeviceResponsivenessTests {
    struct ProbeResult: Decodable {
        var worstMilliseconds: Double
        var worstPlainThreadMilliseconds: Double
        var probes: Int
        var synced: Int
        var scanned: Int
    }

    /// Two rounds at once over 20,000 new files each (one online, one offline), in a process of their own
    /// (`device-responsiveness-probe`, so that the servers and tests beside it are not measured): either would
    /// take a cooperative thread for seconds if it ran there, and together both (a task waited 3.1 s when the
    /// engine ran on them beside an in-process server). A round also asserts that it runs on the device's threads.
    @Test func roundsOverTwentyThousandFilesLeaveTheCooperativePoolResponsive() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        _ = try await server.signIn(email: "ann@example.com", device: "setup")
        let count = 20_000
        let probe = ChildProcess(
            executable: try ChildProcess.built("device-responsiveness-probe"),
            arguments: [
                server.url.absoluteString, "ann@example.com", TestServer.password, app.apiToken, app.container,
                TestServer.temporaryDirectory().path, String(count),
            ])
        let output = try await probe.run()
        #expect(output.status == 0, "\(output.stderr)")
        let result = try JSONDecoder().decode(ProbeResult.self, from: Data(output.stdout.utf8))
        #expect(result.synced == count + 1, "the online round did not sync the folder")
        #expect(result.scanned == count + 1, "the offline round did not scan the folder")
        #expect(result.probes > 20, "the rounds were too short to probe")
        #expect(
            result.worstMilliseconds < 50,
            "a task waited \(result.worstMilliseconds) ms for a cooperative thread (a plain thread woke at worst \(result.worstPlainThreadMilliseconds) ms late)"
        )
    }
}
