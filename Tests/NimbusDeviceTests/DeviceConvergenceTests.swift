import Crypto
import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// Whole engines on real folders against a real server: three devices of one user create, edit,
/// rename, move and delete files and folders at random, each syncing now and then (a device that does
/// not sync for a while is offline), and now and then a device's round is cut off at a random point and
/// its engine started afresh on the same journal (a killed daemon); finally all sync until nothing is
/// left to do. Every folder must then match the server's tree byte for byte, and every content that
/// stayed on a device across one of its rounds, or was on a disk at the end, must be on the server
/// (current, a conflict version, history or Recently Deleted). A failing seed is printed; replay it with
/// `NIMBUS_DEVICE_SEED=S swift test --filter wholeEnginesConverge`, soak with `NIMBUS_DEVICE_SEEDS=N`.
@Suite(.cleansUp) struct DeviceConvergenceTests {
    @Test func wholeEnginesConverge() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seeds: [UInt64] =
            environment["NIMBUS_DEVICE_SEED"].flatMap(UInt64.init).map { [$0] }
            ?? Array(1...(environment["NIMBUS_DEVICE_SEEDS"].flatMap(UInt64.init) ?? 12))
        for seed in seeds {
            let failure = try await Self.scenario(seed: seed)
            #expect(failure == nil, "seed \(seed): \(failure ?? "")")
            if failure != nil { return }
        }
    }

    static func scenario(seed: UInt64) async throws -> String? {
        let deployment = try await TestDeployment.start(.oneNode)
        let app = try await deployment.seedApp()
        var devices: [DeviceSyncTests.Device] = []
        for name in ["one", "two", "three"] {
            let device = try await DeviceSyncTests.Fixture.device(name, deployment: deployment, app: app)
            try FileManager.default.createDirectory(at: device.folder, withIntermediateDirectories: true)
            devices.append(device)
        }
        var random = SeededGenerator(seed: seed)
        // What must not be lost: every content that stayed on a device from the start of one of its rounds
        // that ran to the end to the start of its next (a content replaced before the round after the one
        // that saw it may never have been uploaded, as with no daemon), and every content on a disk at the end.
        var written = Set<String>()
        var seen: [Set<String>] = Array(repeating: [], count: devices.count)
        for step in 0..<40 {
            let index = Int.random(in: 0..<devices.count, using: &random)
            let device = devices[index]
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1:
                let now = Set(try contents(device.folder).values.compactMap { $0 })
                written.formUnion(seen[index].intersection(now))
                _ = try await device.engine.syncOnce()
                seen[index] = now
            case 2:
                // Killed mid-round: the round is cancelled after a random number of turns, and a new engine
                // takes over the journal and folder, as a restarted daemon does. (What it saw need not reach
                // the server: an edit made before the next round replaces it, as it would with no daemon.)
                let round = Task { try await device.engine.syncOnce() }
                for _ in 0..<Int.random(in: 0..<40, using: &random) { await Task.yield() }
                round.cancel()
                _ = try? await round.value
                devices[index] = DeviceSyncTests.Device(
                    engine: SyncEngine(
                        client: device.engine.client, folder: device.folder, journal: device.journal,
                        device: ["one", "two", "three"][index]), folder: device.folder, journal: device.journal)
            default:
                try edit(device.folder, &random, tag: "s\(seed)-\(step)")
            }
        }
        for device in devices { written.formUnion(try contents(device.folder).values.compactMap { $0 }) }
        for _ in 0..<30 {
            var busy = false
            for device in devices { busy = try await device.engine.syncOnce() || busy }
            if !busy { break }
        }
        let inspector = DocumentClient(
            client: NimbusClient(
                session: try await deployment.signIn(email: "ann@example.com", device: "inspector"), apiToken: app.apiToken),
            container: app.container)
        let expected = try await serverTree(inspector)
        for (index, device) in devices.enumerated() {
            let found = try contents(device.folder)
            if found != expected {
                return
                    "device \(index) holds \(found.sorted { $0.key < $1.key }), the server \(expected.sorted { $0.key < $1.key })"
            }
        }
        let kept = try await keptContents(inspector)
        let lost = written.subtracting(kept)
        return lost.isEmpty ? nil : "contents never reached the server: \(lost.sorted())"
    }

    /// One thing a user does: write a new file or a new version, make a folder, rename or move, delete.
    static func edit(_ folder: URL, _ random: inout SeededGenerator, tag: String) throws {
        let items = try contents(folder).keys.sorted()
        let folders = [""] + items.filter { (try? contents(folder)[$0]) == .some(nil) }
        let parent = folders.randomElement(using: &random)!
        let name = ["a.txt", "b.txt", "c", "D.txt", "A.txt"].randomElement(using: &random)!
        let target = parent.isEmpty ? name : parent + "/" + name
        let targetURL = folder.appendingPathComponent(target)
        let free = !FileManager.default.fileExists(atPath: targetURL.path)
        switch Int.random(in: 0..<6, using: &random) {
        case 0, 1:
            if let existing = items.filter({ (try? contents(folder)[$0]) != .some(nil) }).randomElement(using: &random) {
                try Data(tag.utf8).write(to: folder.appendingPathComponent(existing))
            } else if free {
                try Data(tag.utf8).write(to: targetURL)
            }
        case 2 where free:
            try Data(tag.utf8).write(to: targetURL)
        case 3 where free:
            try FileManager.default.createDirectory(at: targetURL, withIntermediateDirectories: false)
        case 4 where free:
            guard let moving = items.randomElement(using: &random), !(target + "/").hasPrefix(moving + "/") else { return }
            try FileManager.default.moveItem(at: folder.appendingPathComponent(moving), to: targetURL)
        case 5:
            guard let deleting = items.randomElement(using: &random) else { return }
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(deleting))
        default:
            return
        }
    }

    /// Every item under the folder by path: a file's SHA-256, nil for a folder.
    static func contents(_ folder: URL) throws -> [String: String?] {
        var found: [String: String?] = [:]
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        while let path = enumerator?.nextObject() as? String {
            var isFolder: ObjCBool = false
            FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).path, isDirectory: &isFolder)
            found[path] =
                isFolder.boolValue
                ? .some(nil)
                : .some(
                    SHA256.hash(data: try Data(contentsOf: folder.appendingPathComponent(path))).map {
                        String(format: "%02x", $0)
                    }.joined())
        }
        return found
    }

    /// The server's live items by path, as `contents` describes a folder.
    static func serverTree(_ client: DocumentClient) async throws -> [String: String?] {
        let items = try await client.changes(since: nil).items.filter { $0.deletedAt == nil }
        let byID = Dictionary(uniqueKeysWithValues: items.map { ($0.itemID, $0) })
        func path(_ item: DocumentItem) -> String {
            guard let parent = item.parentID.flatMap({ byID[$0] }) else { return item.name }
            return path(parent) + "/" + item.name
        }
        return Dictionary(uniqueKeysWithValues: items.map { (path($0), $0.current?.content.contentHash) })
    }

    /// Every content the server keeps: current and conflict versions, history, Recently Deleted.
    static func keptContents(_ client: DocumentClient) async throws -> Set<String> {
        var kept = Set<String>()
        for item in try await client.changes(since: nil).items {
            let versions = try await client.versions(of: item.itemID)
            let all = [versions.item.current].compactMap { $0 } + versions.item.conflicts + versions.history
            kept.formUnion(all.map(\.content.contentHash))
        }
        return kept
    }
}
