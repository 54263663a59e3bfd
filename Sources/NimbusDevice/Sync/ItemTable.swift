/// Values by item ID, read and written like a dictionary but held compactly: the values in one dense array, and
/// a table of 32-bit positions into it.
///
/// A round holds several tables of every item in the container (the synced, remote and local trees, the scan's
/// files). A dictionary sizes its storage for a load of at most three quarters, in powers of two: 100,101 items
/// take 262,144 slots, each as large as a key and its value, so most of a tree's memory was empty slots. Here the
/// empty slots are four bytes each: a slot holds an item's position (plus one; zero is empty), and the key is
/// read where the item lies (`keys`). Slots are probed linearly from the ID's hash; a removal shifts back the
/// slots after it that would otherwise not be found (no markers left behind).
public struct ItemTable<Value> {
    private var slots: [UInt32] = []
    /// In the order the items were added, except that removing one moves the last item into its place.
    public private(set) var keys: [ItemID] = []
    public private(set) var values: [Value] = []

    public init() {}

    public init(_ dictionary: [ItemID: Value]) {
        reserveCapacity(dictionary.count)
        for (id, value) in dictionary { self[id] = value }
    }

    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }

    public mutating func reserveCapacity(_ capacity: Int) {
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
        if Self.slotCount(for: capacity) > slots.count { rehash(into: Self.slotCount(for: capacity)) }
    }

    public subscript(id: ItemID) -> Value? {
        get { find(id).position.map { values[$0] } }
        set {
            let (slot, position) = find(id)
            if let position {
                if let newValue { values[position] = newValue } else { remove(at: position, slot: slot) }
            } else if let newValue {
                precondition(keys.count < Int32.max, "an item table holds fewer than 2^31 items")
                if Self.slotCount(for: keys.count + 1) > slots.count {
                    rehash(into: Self.slotCount(for: keys.count + 1))
                    slots[find(id).slot] = UInt32(keys.count + 1)
                } else {
                    slots[slot] = UInt32(keys.count + 1)
                }
                keys.append(id)
                values.append(newValue)
            }
        }
    }

    /// Where `id`'s value is in `values`.
    public func position(of id: ItemID) -> Int? { find(id).position }

    public func contains(_ id: ItemID) -> Bool { find(id).position != nil }

    /// The slots for `capacity` items: a power of two, at most three quarters full (as a dictionary keeps them).
    private static func slotCount(for capacity: Int) -> Int {
        guard capacity > 0 else { return 0 }
        let least = Swift.max(8, capacity * 4 / 3 + 1)
        return 1 << (Int.bitWidth - (least - 1).leadingZeroBitCount)
    }

    /// Where `id` is held (its slot and its position), or the empty slot where it would go.
    private func find(_ id: ItemID) -> (slot: Int, position: Int?) {
        guard !slots.isEmpty else { return (0, nil) }
        let mask = slots.count - 1
        var slot = id.hashValue & mask
        while slots[slot] != 0 {
            let position = Int(slots[slot]) - 1
            if keys[position] == id { return (slot, position) }
            slot = (slot + 1) & mask
        }
        return (slot, nil)
    }

    /// The slot that holds `position`.
    private func slot(of position: Int) -> Int {
        let mask = slots.count - 1
        var slot = keys[position].hashValue & mask
        while Int(slots[slot]) - 1 != position { slot = (slot + 1) & mask }
        return slot
    }

    /// Removes the item at `position` (held in `slot`) by moving the last one into its place, so the arrays stay
    /// dense.
    private mutating func remove(at position: Int, slot: Int) {
        vacate(slot)
        let last = keys.count - 1
        if position != last {
            slots[self.slot(of: last)] = UInt32(position + 1)
            keys[position] = keys[last]
            values[position] = values[last]
        }
        keys.removeLast()
        values.removeLast()
    }

    /// Empties `slot`, moving back into it each later slot of the run whose item would not be found past the gap.
    private mutating func vacate(_ slot: Int) {
        let mask = slots.count - 1
        var gap = slot
        var next = (slot + 1) & mask
        while slots[next] != 0 {
            let home = keys[Int(slots[next]) - 1].hashValue & mask
            // The item at `next` may move into the gap unless its home lies cyclically after the gap, up to `next`.
            let homeAfterGap = gap <= next ? (gap < home && home <= next) : (gap < home || home <= next)
            if !homeAfterGap {
                slots[gap] = slots[next]
                gap = next
            }
            next = (next + 1) & mask
        }
        slots[gap] = 0
    }

    /// Places every item again in `count` slots.
    private mutating func rehash(into count: Int) {
        slots = Array(repeating: 0, count: count)
        let mask = count - 1
        for (position, id) in keys.enumerated() {
            var slot = id.hashValue & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = UInt32(position + 1)
        }
    }

    /// The same IDs, each with its value transformed: the new table shares this one's keys and slots until either
    /// changes, so it costs only its values (a dictionary of 100,000 paths was 8 MB).
    public func mapValues<T>(_ transform: (Value) throws -> T) rethrows -> ItemTable<T> {
        with(try values.map(transform))
    }

    /// The same IDs with `values`, one for each of `keys` in its order, sharing this table's keys and slots as
    /// `mapValues` does.
    public func with<T>(_ values: [T]) -> ItemTable<T> {
        precondition(values.count == keys.count, "a value for each item")
        var table = ItemTable<T>()
        (table.slots, table.keys, table.values) = (slots, keys, values)
        return table
    }
}

extension ItemTable: Sequence {
    public typealias Element = (key: ItemID, value: Value)

    public func makeIterator() -> some IteratorProtocol<Element> {
        zip(keys, values).lazy.map { (key: $0, value: $1) }.makeIterator()
    }

    public var underestimatedCount: Int { count }
}

extension ItemTable: Equatable where Value: Equatable {
    /// The same IDs with equal values, whatever order they were added in.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.count == rhs.count && zip(lhs.keys, lhs.values).allSatisfy { rhs[$0] == $1 }
    }
}

extension ItemTable: Sendable where Value: Sendable {}
