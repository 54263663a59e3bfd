import Foundation
import NimbusTesting
import Testing

/// HTTP clients other than the SDK's, run as users run them.
@Suite(.cleansUp) struct HTTPClientCompatibilityTests {
    /// ApacheBench speaks HTTP/1.0: without `-k` it reads each answer to the connection's close, with `-k` it
    /// asks for keep-alive and counts on the answer saying it is granted. Either way it hung on a server that
    /// kept HTTP/1.0 connections open without saying so.
    @Test(arguments: [[String](), ["-k"]])
    func apacheBenchFinishesAgainstHealth(_ keepAlive: [String]) async throws {
        let server = try await TestServer.start()
        let bench = ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/ab"),
            arguments: keepAlive + ["-n", "2000", "-c", "8", "-s", "20", "\(server.url.absoluteString)/health"])
        let output = try await bench.run()
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("Complete requests:      2000"), "\(output.stdout)")
        #expect(output.stdout.contains("Failed requests:        0"), "\(output.stdout)")
        #expect(!output.stdout.contains("Non-2xx responses"), "\(output.stdout)")
        if !keepAlive.isEmpty { #expect(output.stdout.contains("Keep-Alive requests:    2000"), "\(output.stdout)") }
    }
}
