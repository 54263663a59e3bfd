import NimbusCore

/// Decides what to do from the three trees alone: a pure function, with no clock, disk or network, so
/// any situation can be built in a test and replayed from its seed.
///
/// Each round the planner compares every item's remote and local state with the synced one (the last
/// state both agreed on) and plans one step for it. A step may leave work for the next round (a place
/// still occupied, a parent not created yet); the engine runs rounds until the plan is empty. The rules,
/// following iCloud's: nothing is lost. An edit wins over a delete. Edits on both sides keep both
/// versions (the server keeps the other as a conflict version). A move on one side and an edit on the
/// other both apply; moves on both sides take the server's. A folder someone deleted comes back when
/// the other side put something in it.
public enum SyncPlanner {
    public static func plan(remote: SyncTree, local: SyncTree, synced: SyncedTree) -> [SyncOperation] {
        var planning = Planning(remote: remote, local: local, synced: synced)
        return planning.plan()
    }
}

private struct Planning {
    let remote: SyncTree
    let local: SyncTree
    let synced: SyncedTree
    var steps = ItemTable<SyncOperation>()

    init(remote: SyncTree, local: SyncTree, synced: SyncedTree) {
        self.remote = remote
        self.local = local
        self.synced = synced
    }

    mutating func plan() -> [SyncOperation] {
        // The items with a step found first, and the table sized for them (with room for the steps the later passes
        // add) before each is decided again: grown as it filled, the table of 100,000 steps (~190 bytes each) was held
        // twice over while it moved, 35 MB. A round with nothing to do decides each item once, as before.
        let changed = everyID().filter { decide($0) != nil }
        steps.reserveCapacity(changed.count + changed.count / 16 + 16)
        for id in changed { steps[id] = decide(id) }
        keepFoldersThatStillHoldItems()
        waitForOccupiedPlaces()
        return order()
    }

    /// Each item of the trees once, without a set of them all (at 100,000 items, a set was 4 MB of a round's peak).
    func everyID(includingSynced: Bool = true) -> [ItemID] {
        var ids = remote.items.keys + local.items.keys.filter { remote[$0] == nil }
        if includingSynced { synced.forEachID { if remote[$0] == nil && local[$0] == nil { ids.append($0) } } }
        return ids
    }

    // MARK: - One item

    func decide(_ id: ItemID) -> SyncOperation? {
        let (r, l, s) = (remote[id], local[id], synced[id])
        if r == l { return r == s ? nil : SyncOperation(id, .record, synced: r) }
        if r == s { return localChange(id, l, s) }
        if l == s { return remoteChange(id, r, s) }
        return changesOnBothSides(id, r, l, s)
    }

    /// Only the disk changed since the last agreement.
    func localChange(_ id: ItemID, _ l: SyncItem?, _ s: SyncItem?) -> SyncOperation {
        guard let l else { return SyncOperation(id, .deleteRemote(base: s?.content), synced: nil) }
        guard let s else { return SyncOperation(id, .upload(l, base: nil), synced: l) }
        if l.differsInContent(from: s) { return SyncOperation(id, .upload(l, base: s.content), synced: l) }
        return moveRemote(id, to: l.place, from: s)
    }

    /// Only the server changed since the last agreement.
    func remoteChange(_ id: ItemID, _ r: SyncItem?, _ s: SyncItem?) -> SyncOperation? {
        guard let r else { return SyncOperation(id, .deleteLocal, synced: nil) }
        guard let s, !r.differsInContent(from: s) else { return SyncOperation(id, .download(r), synced: r) }
        return moveLocal(id, to: r.place, synced: r)
    }

    func changesOnBothSides(_ id: ItemID, _ r: SyncItem?, _ l: SyncItem?, _ s: SyncItem?) -> SyncOperation? {
        guard let l else {
            // Deleted here, changed there: an edit there wins; a move there loses to the delete.
            guard let r, let s else { return nil }
            if r.differsInContent(from: s) { return SyncOperation(id, .download(r), synced: r) }
            return SyncOperation(id, .deleteRemote(base: s.content), synced: nil)
        }
        guard let r else {
            guard let s else { return nil }
            if l.differsInContent(from: s) { return SyncOperation(id, .upload(l, base: s.content), synced: l) }
            return SyncOperation(id, .deleteLocal, synced: nil)
        }
        guard let s else {
            // Both sides hold an item neither knows the other has (a lost journal): the server keeps
            // both contents.
            if l.differsInContent(from: r) { return SyncOperation(id, .upload(l, base: nil), synced: l) }
            return l.place == r.place ? SyncOperation(id, .record, synced: r) : moveLocal(id, to: r.place, synced: r)
        }
        if l.place != r.place {
            // Places first, then contents, in the next round.
            if r.place != s.place { return moveLocal(id, to: r.place, synced: s.moved(to: r.place)) }
            return moveRemote(id, to: l.place, from: s)
        }
        if l.differsInContent(from: s) { return SyncOperation(id, .upload(l, base: s.content), synced: l) }
        return SyncOperation(id, .download(r), synced: r)
    }

    /// A move on the server, unless it would put the item inside itself there (the server moved the
    /// new parent under it meanwhile): then the server's place wins and the disk moves back.
    func moveRemote(_ id: ItemID, to place: Place, from s: SyncItem) -> SyncOperation {
        if let parent = place.parent, remote.isWithin(parent, id), let r = remote[id] {
            return SyncOperation(id, .moveLocal(to: r.place), synced: r)
        }
        return SyncOperation(id, .moveRemote(to: place), synced: s.moved(to: place))
    }

    /// A move on the disk; one that would put the item inside itself waits for the other side's moves
    /// to be undone (see `moveRemote`).
    func moveLocal(_ id: ItemID, to place: Place, synced: SyncItem) -> SyncOperation? {
        if let parent = place.parent, local.isWithin(parent, id) { return nil }
        return SyncOperation(id, .moveLocal(to: place), synced: synced)
    }

    // MARK: - Across items

    /// A folder deleted on one side while the other put something in it (or edited something in it)
    /// comes back on the side that deleted it, with what it holds.
    mutating func keepFoldersThatStillHoldItems() {
        var changed = true
        while changed {
            changed = false
            var holders: Set<ItemID> = []
            for id in everyID(includingSynced: false) {
                guard let place = finalPlace(id), let parent = place.parent else { continue }
                holders.insert(parent)
            }
            for (id, step) in steps where holders.contains(id) {
                switch step.action {
                case .deleteRemote:
                    guard let r = remote[id] else { continue }
                    steps[id] = SyncOperation(id, .download(r), synced: r)
                case .deleteLocal:
                    guard let l = local[id] else { continue }
                    steps[id] = SyncOperation(id, .upload(l, base: synced[id]?.content), synced: l)
                default: continue
                }
                changed = true
            }
        }
    }

    /// Where the item will be once this round's steps ran (`nil`: deleted).
    func finalPlace(_ id: ItemID) -> Place? {
        guard let step = steps[id] else { return (local[id] ?? remote[id])?.place }
        if step.isDeletion { return nil }
        return step.localPlace(before: local[id]) ?? step.remotePlace(before: remote[id])
    }

    enum Side { case local, remote }

    /// A step whose place is taken by another item waits for the next round, when that item will have
    /// left or the server will have settled the collision. An item that exists on that side steps aside
    /// to a temporary name instead, so that items trading places cannot wait on each other forever; and
    /// an item leaving a place a new item waits for steps aside at once, since where it is going may be
    /// inside that new item, and a folder being deleted may hold items going into it.
    mutating func waitForOccupiedPlaces() {
        // A round with nothing to do needs no index of places.
        guard !steps.isEmpty else { return }
        let occupants = (local: local.placeIndex(), remote: remote.placeIndex())
        for id in steps.keys.sorted() {
            guard let step = steps[id] else { continue }
            if let target = step.localPlace(before: local[id]), target != local[id]?.place {
                settle(id, on: .local, target: target, occupants: occupants.local)
            }
            if let target = step.remotePlace(before: remote[id]), target != remote[id]?.place {
                settle(id, on: .remote, target: target, occupants: occupants.remote)
            }
        }
    }

    mutating func settle(_ id: ItemID, on side: Side, target: Place, occupants: PlaceIndex) {
        guard let occupant = occupants[target], occupant != id else { return }
        let tree = side == .local ? local : remote
        let leaving = steps[occupant].map { step in
            (side == .local ? step.localPlace(before: tree[occupant]) : step.remotePlace(before: tree[occupant])) != target
        }
        guard let leaving, leaving else {
            // The occupant stays: on the disk the step waits until the occupant reaches the server,
            // which settles the collision (the same new name becomes one item with a conflict version,
            // a moved item takes a free name); on the server the server settles it now.
            if side == .local { steps[id] = nil }
            return
        }
        if tree[id] != nil {
            steps[id] = stepAside(id, near: target, on: side)
        } else {
            steps[id] = nil
            steps[occupant] = stepAside(occupant, near: target, on: side)
        }
    }

    func stepAside(_ id: ItemID, near place: Place, on side: Side) -> SyncOperation? {
        let aside = Self.aside(place, id)
        switch side {
        case .local: return SyncOperation(id, .moveLocal(to: aside), synced: synced[id])
        case .remote:
            guard let s = synced[id] else { return nil }
            return SyncOperation(id, .moveRemote(to: aside), synced: s.moved(to: aside))
        }
    }

    static func aside(_ place: Place, _ id: ItemID) -> Place {
        // ".~", so that no item's temporary name looks like the engine's own temporary files; the name is
        // shortened (by whole characters) so that the temporary one still fits in a name's 255 bytes.
        let suffix = ".nimbus-\(id.rawValue)"
        var name = place.name
        while 2 + name.utf8.count + suffix.utf8.count > DocumentNames.maxNameBytes, !name.isEmpty { name.removeLast() }
        return Place(parent: place.parent, name: ".~\(name)\(suffix)")
    }

    /// Parents before children; deletions last, children before parents (a folder is removed once
    /// empty); ties by item ID, so one state always gives one plan. The steps are moved into that order in place,
    /// leaving none planned: a sorted copy beside them was ~10 MB of a round's peak at 56,000 steps.
    mutating func order() -> [SyncOperation] {
        // Each step's depth once: it walks the step's parents.
        let depths = steps.values.map(depth)
        var order = Array(steps.values.indices)
        order.sort { a, b in
            let (stepA, stepB) = (steps.values[a], steps.values[b])
            if stepA.isDeletion != stepB.isDeletion { return !stepA.isDeletion }
            if depths[a] != depths[b] { return stepA.isDeletion ? depths[a] > depths[b] : depths[a] < depths[b] }
            return stepA.item < stepB.item
        }
        var ordered = steps.values
        steps = ItemTable()
        // The step at `order[i]` goes to `i`: each cycle of moves is followed once, and a done position marks itself.
        for start in order.indices where order[start] != start {
            let first = ordered[start]
            var current = start
            while order[current] != start {
                let next = order[current]
                ordered[current] = ordered[next]
                order[current] = current
                current = next
            }
            ordered[current] = first
            order[current] = current
        }
        return ordered
    }

    func depth(_ step: SyncOperation) -> Int {
        if step.isDeletion { return max(local.depth(of: step.item), remote.depth(of: step.item)) }
        guard let parent = finalPlace(step.item)?.parent else { return 0 }
        var depth = 1
        var current = finalPlace(parent)?.parent
        var seen: Set<ItemID> = [parent]
        while let next = current, seen.insert(next).inserted {
            depth += 1
            current = finalPlace(next)?.parent
        }
        return depth
    }
}
