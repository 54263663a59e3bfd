import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import NimbusCore

/// Two Syncthing instances (Debian's) sharing one folder, each with a home of its own and every port on
/// loopback; everything that would reach beyond this machine is off: global and local discovery, relays,
/// NAT traversal and STUN, usage and crash reporting, upgrades. The peers know each other's address, and
/// the folder's watcher waits `watcherDelay` seconds after a change before it scans (Syncthing's default is
/// 10; the side-by-side runs give it 1).
final class SyncthingPeers: SyncPeers {
    struct Instance {
        let home: URL
        let folder: URL
        let id: String
        let guiPort: Int
        let listenPort: Int
        let apiKey: String
        let process: Process

        func get(_ path: String) async throws -> [String: Any] {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(guiPort)\(path)")
            request.headers.add(name: "X-API-Key", value: apiKey)
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 16 << 20)
            guard response.status == .ok,
                let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            else { throw BenchmarkError("Syncthing answered \(path) with \(response.status)") }
            return object
        }
    }

    let name = "Syncthing"
    let first: Instance
    let second: Instance

    var a: URL { first.folder }
    var b: URL { second.folder }
    var processes: [(role: String, pid: Int32)] {
        [("A", first.process.processIdentifier), ("B", second.process.processIdentifier)]
    }

    static let executable = URL(fileURLWithPath: "/usr/bin/syncthing")

    init(in root: URL, watcherDelay: Int = 1) async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable.path) else {
            throw BenchmarkError("Syncthing is not installed (Debian's syncthing; scripts/benchmark installs it)")
        }
        let homes = [root.appendingPathComponent("syncthing-a"), root.appendingPathComponent("syncthing-b")]
        let ids = try homes.map(Self.generate)
        let ports = (0..<4).map { _ in Int.random(in: 20000...40000) }
        let keys = (0..<2).map { _ in UUIDString.random() }
        var instances: [Instance] = []
        for side in 0..<2 {
            let folder = root.appendingPathComponent("syncthing-folder-\(side == 0 ? "a" : "b")")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let other = 1 - side
            try Self.configuration(
                id: ids[side], peer: ids[other], peerPort: ports[2 + other], folder: folder, guiPort: ports[side],
                listenPort: ports[2 + side], apiKey: keys[side], watcherDelay: watcherDelay
            ).write(to: homes[side].appendingPathComponent("config.xml"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = Self.executable
            process.arguments = [
                "serve", "--home=\(homes[side].path)", "--no-browser", "--no-restart", "--no-upgrade",
                "--logfile=\(homes[side].appendingPathComponent("syncthing.log").path)",
            ]
            var environment = ProcessInfo.processInfo.environment
            environment["STNOUPGRADE"] = "1"
            environment["STNODEFAULTFOLDER"] = "1"
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            instances.append(
                Instance(
                    home: homes[side], folder: folder, id: ids[side], guiPort: ports[side], listenPort: ports[2 + side],
                    apiKey: keys[side], process: process))
        }
        (first, second) = (instances[0], instances[1])
        try await waitUntilConnected()
    }

    func stop() {
        for instance in [first, second] where instance.process.isRunning {
            instance.process.terminate()
            instance.process.waitUntilExit()
        }
    }

    /// Waits until each instance is connected to the other and both see the folder idle.
    private func waitUntilConnected() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        for (instance, peer) in [(first, second), (second, first)] {
            while true {
                let connections = try? await instance.get("/rest/system/connections")
                let status = try? await instance.get("/rest/db/status?folder=bench")
                let connected =
                    ((connections?["connections"] as? [String: Any])?[peer.id] as? [String: Any])?["connected"] as? Bool
                if connected == true, status?["state"] as? String == "idle" { break }
                guard ContinuousClock.now < deadline else {
                    throw BenchmarkError("the Syncthing instances did not connect (see \(instance.home.path)/syncthing.log)")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Makes a key and certificate in `home`; the device id they give.
    private static func generate(_ home: URL) throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["generate", "--home=\(home.path)", "--no-default-folder", "--skip-port-probing"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = text.split(separator: "\n").first(where: { $0.contains("Device ID: ") }),
            let id = line.components(separatedBy: "Device ID: ").last?.trimmingCharacters(in: .whitespaces)
        else { throw BenchmarkError("syncthing generate failed: \(text)") }
        return id
    }

    /// The instance's whole configuration: written rather than edited, so no default that reaches beyond
    /// loopback survives.
    private static func configuration(
        id: String, peer: String, peerPort: Int, folder: URL, guiPort: Int, listenPort: Int, apiKey: String,
        watcherDelay: Int
    ) -> String {
        """
        <configuration version="36">
            <folder id="bench" label="bench" path="\(folder.path)" type="sendreceive" rescanIntervalS="3600" fsWatcherEnabled="true" fsWatcherDelayS="\(watcherDelay)" ignorePerms="false" autoNormalize="true">
                <filesystemType>basic</filesystemType>
                <device id="\(id)" introducedBy=""></device>
                <device id="\(peer)" introducedBy=""></device>
                <minDiskFree unit="%">1</minDiskFree>
            </folder>
            <device id="\(id)" name="self" compression="metadata" introducer="false">
                <address>dynamic</address>
            </device>
            <device id="\(peer)" name="peer" compression="metadata" introducer="false">
                <address>tcp://127.0.0.1:\(peerPort)</address>
            </device>
            <gui enabled="true" tls="false">
                <address>127.0.0.1:\(guiPort)</address>
                <apikey>\(apiKey)</apikey>
            </gui>
            <options>
                <listenAddress>tcp://127.0.0.1:\(listenPort)</listenAddress>
                <globalAnnounceEnabled>false</globalAnnounceEnabled>
                <localAnnounceEnabled>false</localAnnounceEnabled>
                <relaysEnabled>false</relaysEnabled>
                <natEnabled>false</natEnabled>
                <stunKeepaliveStartS>0</stunKeepaliveStartS>
                <stunServer></stunServer>
                <urAccepted>-1</urAccepted>
                <urURL></urURL>
                <crashReportingEnabled>false</crashReportingEnabled>
                <crashReportingURL></crashReportingURL>
                <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
                <releasesURL></releasesURL>
                <startBrowser>false</startBrowser>
                <setLowPriority>false</setLowPriority>
            </options>
        </configuration>
        """
    }
}
