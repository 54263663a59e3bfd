import Foundation
import NimbusTestingCore
import Testing

@testable import NimbusDevice

/// Three devices edit one container at random — creating, editing, renaming, moving and deleting files
/// and folders, going offline and back — syncing now and then; finally all come online and sync until
/// nothing is left to do. Every device must then hold exactly the server's tree, and no step may ever
/// have destroyed content the server did not have. A failing seed is printed; replay it with its trace:
/// `NIMBUS_SYNC_SEED=182 swift test --filter randomScenariosConverge`.
@Suite struct SyncPlannerConvergenceTests {
    /// 5,000 in the suite; a longer soak: `NIMBUS_SYNC_SEEDS=100000 swift test --filter randomScenariosConverge`.
    static let seeds: ClosedRange<UInt64> =
        1...(ProcessInfo.processInfo.environment["NIMBUS_SYNC_SEEDS"].flatMap(UInt64.init) ?? 5_000)

    @Test func randomScenariosConverge() async {
        if let replayed = ProcessInfo.processInfo.environment["NIMBUS_SYNC_SEED"].flatMap(UInt64.init) {
            let failure = Self.scenario(seed: replayed, trace: true)
            #expect(failure == nil, "seed \(replayed): \(failure ?? "")")
            return
        }
        var failures: [String] = []
        for seed in Self.seeds {
            if let failure = Self.scenario(seed: seed) { failures.append("seed \(seed): \(failure)") }
            if failures.count >= 5 { break }
            // Long CPU work yields between rounds: the cooperative threads are every other test's too.
            await Task.yield()
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// What went wrong in the scenario of `seed`, or nil.
    static func scenario(seed: UInt64, trace: Bool = false) -> String? {
        var random = SeededGenerator(seed: seed)
        let steps = Int.random(in: 10...120, using: &random)
        var server = ModelServer()
        var devices = Array(repeating: ModelDevice(), count: 3)
        var written = 0
        for _ in 0..<steps {
            let index = Int.random(in: 0..<devices.count, using: &random)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                written += 1
                devices[index].editAtRandom(&random, tag: "d\(index)v\(written)")
                if trace { print("device \(index) edits: \(describe(devices[index].disk))") }
            case 6..<9:
                if devices[index].online { _ = devices[index].sync(with: &server, trace: trace ? "device \(index)" : nil) }
            default:
                devices[index].online.toggle()
            }
        }
        for index in devices.indices { devices[index].online = true }
        for _ in 0..<40 {
            var busy = false
            for index in devices.indices {
                busy = devices[index].sync(with: &server, trace: trace ? "device \(index)" : nil) || busy
            }
            if !busy { break }
        }
        for (index, device) in devices.enumerated() {
            if !device.lostContent.isEmpty { return "device \(index) destroyed unsent \(device.lostContent)" }
            if device.disk != server.tree || device.synced != server.tree {
                return "device \(index) did not converge:\n disk \(describe(device.disk))\n server \(describe(server.tree))"
            }
        }
        return nil
    }

    static func describe(_ tree: SyncTree) -> String {
        tree.items.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
    }
}

extension ModelDevice {
    /// One thing a user does to the folder: on a disk, so names are unique in a folder and a folder
    /// cannot move into itself.
    mutating func editAtRandom(_ random: inout SeededGenerator, tag: String) {
        let folders = [nil] + disk.items.filter { $0.value.kind == .folder }.map(\.key).sorted().map { Optional($0) }
        let parent = folders.randomElement(using: &random)!
        let place = Place(parent: parent, name: ["a", "b", "c", "A"].randomElement(using: &random)!)
        let placeIsFree = !disk.items.values.contains { $0.place == place }
        let existing = disk.items.keys.sorted().randomElement(using: &random)
        switch Int.random(in: 0..<6, using: &random) {
        case 0 where placeIsFree:
            disk[ItemID(tag)] = SyncItem(place: place, kind: .file, content: tag)
        case 1 where placeIsFree:
            disk[ItemID(tag)] = SyncItem(place: place, kind: .folder, content: nil)
        case 2, 3:
            if let existing, disk[existing]?.kind == .file { disk[existing]?.content = tag }
        case 4:
            guard let existing, placeIsFree else { return }
            if let parent, disk.isWithin(parent, existing) { return }
            disk[existing]?.place = place
        case 5:
            guard let existing else { return }
            for id in disk.items.keys.filter({ disk.isWithin($0, existing) }) { disk[id] = nil }
        default:
            return
        }
    }
}
