import Foundation
import Logging
import NimbusCore
import NimbusDevice
import NimbusKit

package struct BenchmarkError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// Two devices of one user, each a sync engine with its own folder and journal.
package struct DevicePair: Sendable {
    package struct Device: Sendable {
        package let engine: SyncEngine
        package let client: DocumentClient
        package let folder: URL
        package let session: NimbusSession

        package func write(_ path: String, _ bytes: Data) throws {
            let url = folder.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try bytes.write(to: url)
        }

        package func read(_ path: String) -> Data? {
            FileManager.default.contents(atPath: folder.appendingPathComponent(path).path)
        }

        /// Polls every half millisecond, for up to a minute, until the file holds `bytes`.
        package func waitFor(_ path: String, _ bytes: Data) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while read(path) != bytes {
                guard ContinuousClock.now < deadline else { throw BenchmarkError("\(path) never arrived") }
                try await Task.sleep(for: .microseconds(500))
            }
        }
    }

    package let a: Device
    package let b: Device
    package let container: String

    package init(_ server: ServerProcess, name: String) async throws {
        try await self.init(a: server, b: server, name: name)
    }

    /// A pair whose devices connect to two nodes: A to `a`, B to `b`.
    package init(a serverA: ServerProcess, b serverB: ServerProcess, name: String) async throws {
        container = serverA.container
        func device(_ device: String, on server: ServerProcess) async throws -> Device {
            let session = try await server.signIn("\(name)@bench.local", device: device)
            let root = server.dataDirectory.deletingLastPathComponent().appendingPathComponent(
                "nimbus-bench-device-\(UUIDString.random())")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let journal = try DeviceJournal(path: root.appendingPathComponent("journal.sqlite").path)
            let client = DocumentClient(
                client: NimbusClient(session: session, apiToken: server.apiToken), container: server.container)
            let folder = root.appendingPathComponent("Mobile Documents/container")
            return Device(
                engine: SyncEngine(client: client, folder: folder, journal: journal, device: device), client: client,
                folder: folder,
                session: session)
        }
        a = try await device("a", on: serverA)
        b = try await device("b", on: serverB)
    }

    /// Runs `body` while both devices' daemons run.
    package func withDaemons<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let tasks = [a, b].map { device in
            let daemon = DeviceDaemon(
                engine: device.engine, folder: device.folder, session: device.session, container: container,
                rescanInterval: .seconds(600), logger: Logger(label: "bench"))
            return Task { try await daemon.run() }
        }
        defer { for task in tasks { task.cancel() } }
        return try await body()
    }

    /// Milliseconds from writing each file on A until B holds the same bytes, one file at a time.
    package func propagation(files: Int) async throws -> [Double] {
        var latencies: [Double] = []
        for index in 0..<(files + 5) {
            let bytes = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &+ index) })
            let start = ContinuousClock.now
            try a.write("Documents/p\(index).txt", bytes)
            try await b.waitFor("Documents/p\(index).txt", bytes)
            if index >= 5 { latencies.append((ContinuousClock.now - start).milliseconds) }
        }
        return latencies
    }
}
