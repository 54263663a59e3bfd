import NimbusCore
@testable import NimbusDevice

/// The server's document rules, kept in memory, for driving the planner through thousands of
/// situations: commits on a base version (a stale base keeps both versions), resurrecting a deleted
/// item that was edited elsewhere, deletes refused over an unseen edit, collisions settled without
/// loss (the same new name merges into one item with a conflict version; a moved item takes a free
/// name), moves that would make a cycle refused.
struct ModelServer {
    enum Outcome: Equatable {
        case applied
        case merged(into: ItemID)
        case refused
    }

    private(set) var tree = SyncTree()
    private(set) var deleted: [ItemID: SyncItem] = [:]
    /// Every content the server ever accepted: current, conflict versions, history, Recently Deleted.
    private(set) var versions: Set<String> = []

    mutating func commit(_ id: ItemID, _ item: SyncItem, base: String?) -> Outcome {
        if let current = tree[id] {
            keep(item)
            guard item.kind == current.kind else { return .refused }
            if base == current.content || item.content == current.content {
                return move(id, to: item.place, content: item.content)
            }
            // Two edits on one base: both kept; the larger content stands in for the later date.
            if let content = item.content, content > (current.content ?? "") { tree[id]?.content = content }
            return .applied
        }
        guard parentExists(item.place) else { return .refused }
        keep(item)
        if deleted.removeValue(forKey: id) != nil {
            tree[id] = item.moved(to: freePlace(item.place))
            return .applied
        }
        if let occupant = occupant(item.place), let existing = tree[occupant], existing.kind == item.kind {
            if let content = item.content, content > (existing.content ?? "") { tree[occupant]?.content = content }
            return .merged(into: occupant)
        }
        tree[id] = item.moved(to: freePlace(item.place))
        return .applied
    }

    mutating func move(_ id: ItemID, to place: Place) -> Outcome { move(id, to: place, content: tree[id]?.content) }

    private mutating func move(_ id: ItemID, to place: Place, content: String?) -> Outcome {
        guard let current = tree[id], parentExists(place) else { return .refused }
        if let parent = place.parent, tree.isWithin(parent, id) { return .refused }
        var item = current
        item.content = content
        if place != current.place { item.place = freePlace(place) }
        tree[id] = item
        return .applied
    }

    mutating func delete(_ id: ItemID, base: String?) -> Outcome {
        guard let current = tree[id] else { return .applied }
        if current.kind != .folder && current.content != base { return .refused }
        if tree.items.values.contains(where: { $0.place.parent == id }) { return .refused }
        tree[id] = nil
        deleted[id] = current
        return .applied
    }

    private mutating func keep(_ item: SyncItem) {
        if let content = item.content { versions.insert(content) }
    }

    private func parentExists(_ place: Place) -> Bool { place.parent.map { tree[$0]?.kind == .folder } ?? true }

    private func occupant(_ place: Place) -> ItemID? { tree.items.first { $0.value.place == place }?.key }

    /// The place itself when free, else "name 2", "name 3"… as Finder names copies.
    private func freePlace(_ place: Place) -> Place {
        var candidate = place
        var number = 2
        while occupant(candidate) != nil {
            candidate.name = "\(place.name) \(number)"
            number += 1
        }
        return candidate
    }
}

/// A device: its disk (as a tree) and its journal's synced tree, running planned steps the way the
/// engine's executor does — each checked against the disk as it is when the step runs.
struct ModelDevice {
    var disk = SyncTree()
    var synced = SyncTree()
    var online = true
    /// Set when a step would have destroyed content the server never received.
    var lostContent: [String] = []
    /// This round's new folders the server merged into existing ones.
    var rekeyed: [ItemID: ItemID] = [:]

    /// Runs one round; whether it planned anything.
    mutating func sync(with server: inout ModelServer, trace: String? = nil) -> Bool {
        rekeyed = [:]
        // The synced tree as a round reads it from the journal: what differs from the server's.
        let plan = SyncPlanner.plan(remote: server.tree, local: disk, synced: SyncedTree(synced, over: server.tree))
        for step in plan {
            run(step, on: &server)
            if let trace { print("\(trace) \(step) → disk \(SyncPlannerConvergenceTests.describe(disk))") }
        }
        return !plan.isEmpty
    }

    mutating func run(_ step: SyncOperation, on server: inout ModelServer) {
        let id = step.item
        // Like the engine, steps planned inside a folder the server merged go to the folder it merged into.
        var action = step.action
        switch action {
        case .upload(var item, let base):
            if let parent = item.place.parent, let merged = rekeyed[parent] { item.place.parent = merged }
            action = .upload(item, base: base)
        case .moveRemote(var place):
            if let parent = place.parent, let merged = rekeyed[parent] { place.parent = merged }
            action = .moveRemote(to: place)
        default: break
        }
        var expected = step.synced
        if let parent = expected?.place.parent, let merged = rekeyed[parent] { expected?.place.parent = merged }
        let step = SyncOperation(id, action, synced: expected)
        switch step.action {
        case .upload(let item, let base):
            guard disk[id].map({ !$0.differsInContent(from: item) }) ?? false else { return }
            switch server.commit(id, item, base: base) {
            case .applied: synced[id] = step.synced
            case .merged(let existing) where item.kind == .folder:
                // The same new folder on two devices: this one is that folder now, and what it holds is
                // in that folder — unless the disk holds that folder elsewhere already: then this one is
                // renamed as Finder names copies, and uploaded under that name next round.
                // Either way, what this round puts in the folder goes to the existing one, as the server's writer
                // puts the rest of a batch.
                rekeyed[id] = existing
                guard disk[existing] == nil else {
                    guard let place = disk[id]?.place else { return }
                    let taken = Set(disk.items.values.filter { $0.place.parent == place.parent }.map(\.place.name))
                    disk[id]?.place.name =
                        (2...).lazy.map { DocumentNames.numbered(place.name, $0) }.first { !taken.contains($0) } ?? place.name
                    return
                }
                disk[existing] = disk[id]
                disk[id] = nil
                synced[existing] = step.synced
                for (child, held) in disk.items where held.place.parent == id { disk[child]?.place.parent = existing }
                for (child, held) in synced.items where held.place.parent == id { synced[child]?.place.parent = existing }
            case .merged(let existing):
                // The server made this new item a version of the one already at its name: the file
                // is that item now, unless the disk holds that item elsewhere already (then the
                // server's conflict version is what remains of this one).
                if disk[existing] == nil {
                    disk[existing] = disk[id]
                    synced[existing] = step.synced
                }
                disk[id] = nil
            case .refused: return
            }
        case .moveRemote(let place):
            if server.move(id, to: place) == .applied { synced[id] = step.synced }
        case .deleteRemote(let base):
            if server.delete(id, base: base) == .applied { synced[id] = nil }
        case .download(let item):
            guard placeIsFree(item.place, for: id), destroysNothingUnsent(id, server) else { return }
            disk[id] = item
            synced[id] = step.synced
        case .moveLocal(let place):
            guard disk[id] != nil, placeIsFree(place, for: id) else { return }
            if let parent = place.parent, disk.isWithin(parent, id) { return }
            disk[id]?.place = place
            synced[id] = step.synced
        case .deleteLocal:
            guard !disk.items.values.contains(where: { $0.place.parent == id }),
                destroysNothingUnsent(id, server)
            else { return }
            disk[id] = nil
            synced[id] = nil
        case .record:
            synced[id] = step.synced
        }
    }

    private func placeIsFree(_ place: Place, for id: ItemID) -> Bool {
        if let parent = place.parent, disk[parent]?.kind != .folder { return false }
        return !disk.items.contains { $0.key != id && $0.value.place == place }
    }

    private mutating func destroysNothingUnsent(_ id: ItemID, _ server: ModelServer) -> Bool {
        if let content = disk[id]?.content, !server.versions.contains(content) { lostContent.append(content) }
        return true
    }
}
