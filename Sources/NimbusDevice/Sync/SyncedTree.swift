/// The synced tree as a round reads it: only the items whose synced state is not the server's, over the remote tree
/// for the rest. Once devices agree, the two trees differ only by what is in flight, and a second whole tree was
/// ~10 MB of a daemon's peak at 100,000 items.
public struct SyncedTree: Sendable {
    /// The tree the synced one is, except at `differences`.
    let base: SyncTree
    /// Where the synced tree is not `base`: its item there, or nil where it has none.
    let differences: ItemTable<SyncItem?>

    init(base: SyncTree, differences: ItemTable<SyncItem?>) {
        self.base = base
        self.differences = differences
    }

    /// `synced` as what differs from `base` (the journal finds the same in SQL).
    init(_ synced: SyncTree, over base: SyncTree) {
        var differences = ItemTable<SyncItem?>()
        for (id, item) in synced.items where base[id] != item { differences[id] = .some(item) }
        for id in base.items.keys where synced[id] == nil { differences[id] = .some(nil) }
        self.init(base: base, differences: differences)
    }

    subscript(id: ItemID) -> SyncItem? {
        if let position = differences.position(of: id) { return differences.values[position] }
        return base[id]
    }

    /// Calls `body` with each item the synced tree holds, once.
    func forEachID(_ body: (ItemID) -> Void) {
        for id in base.items.keys where !differences.contains(id) { body(id) }
        for (id, item) in zip(differences.keys, differences.values) where item != nil { body(id) }
    }
}
