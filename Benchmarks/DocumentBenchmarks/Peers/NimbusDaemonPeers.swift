import BenchmarkSupport
import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit

/// Two devices of one user, each a real `nimbus device run` process with a root of its own, syncing one
/// container through a `nimbus serve` on loopback: what a person running Nimbus on two machines runs.
final class NimbusDaemonPeers: SyncPeers {
    let name = "Nimbus"
    let server: ServerProcess
    let roots: [URL]
    let daemons: [Process]

    var a: URL { folder(roots[0]) }
    var b: URL { folder(roots[1]) }
    var processes: [(role: String, pid: Int32)] {
        [("A", daemons[0].processIdentifier), ("B", daemons[1].processIdentifier), ("server", server.pid)]
    }

    init(server: ServerProcess, nimbus: URL, in root: URL) async throws {
        self.server = server
        let email = "peers-\(UUIDString.random().prefix(8))@bench.local"
        roots = ["a", "b"].map { root.appendingPathComponent("nimbus-\($0)") }
        _ = try await server.signIn(email, device: "setup")
        var daemons: [Process] = []
        for (side, device) in zip(roots, ["a", "b"]) {
            let config = side.appendingPathComponent("config").path
            try ServerProcess.runCommand(
                nimbus,
                [
                    "login", "--config", config, "--server", server.url.absoluteString, "--email", email, "--password",
                    ServerProcess.password, "--device-name", device, "--api-token", server.apiToken, "--container",
                    server.container,
                ])
            let daemon = Process()
            daemon.executableURL = nimbus
            daemon.arguments = [
                "device", "run", "--config", config, "--server", server.url.absoluteString, "--root", side.path,
                "--rescan-seconds", "600",
            ]
            daemon.standardOutput = FileHandle.nullDevice
            daemon.standardError = FileHandle.nullDevice
            try daemon.run()
            daemons.append(daemon)
        }
        self.daemons = daemons
        for side in roots { try await Self.waitUntilSynced(side) }
    }

    func stop() {
        for daemon in daemons where daemon.isRunning {
            daemon.terminate()
            daemon.waitUntilExit()
        }
    }

    private func folder(_ root: URL) -> URL {
        root.appendingPathComponent("Mobile Documents")
            .appendingPathComponent(server.container.replacingOccurrences(of: ".", with: "~"))
    }

    /// Waits until the daemon on `root` answers on its control socket and has finished a round.
    private static func waitUntilSynced(_ root: URL) async throws {
        let socket = ControlSocket.path(root: root)
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            if let status = (try? DaemonConnection.ask(ControlRequest(command: .status), at: socket))?.folders?.first,
                status.lastSyncedAt != nil, status.pending == 0
            {
                return
            }
            guard ContinuousClock.now < deadline else { throw BenchmarkError("the daemon on \(root.path) did not start") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
