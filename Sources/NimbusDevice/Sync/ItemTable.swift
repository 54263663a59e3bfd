/// Values by item ID, read and written like a dictionary but held compactly: the values in one dense array, and a
/// dictionary only from each ID to its position.
///
/// A round holds several tables of every item in the container (the synced, remote and local trees, the scan's
/// files). A dictionary sizes its storage for a load of at most three quarters, in powers of two: 100,101 items
/// take 262,144 slots, each as large as a key and its value, so most of a tree's memory was empty slots. Here only
/// the positions (an ID and a 32-bit number) pay for the empty slots.
public struct ItemTable<Value> {
    private var positions: [ItemID: Int32] = [:]
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
        positions.reserveCapacity(capacity)
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
    }

    public subscript(id: ItemID) -> Value? {
        get { positions[id].map { values[Int($0)] } }
        set {
            if let position = positions[id].map(Int.init) {
                if let newValue { values[position] = newValue } else { remove(at: position) }
            } else if let newValue {
                precondition(keys.count < Int32.max, "an item table holds fewer than 2^31 items")
                positions[id] = Int32(keys.count)
                keys.append(id)
                values.append(newValue)
            }
        }
    }

    /// Removes the item at `position` by moving the last one into its place, so the arrays stay dense.
    private mutating func remove(at position: Int) {
        positions[keys[position]] = nil
        let last = keys.count - 1
        if position != last {
            keys[position] = keys[last]
            values[position] = values[last]
            positions[keys[position]] = Int32(position)
        }
        keys.removeLast()
        values.removeLast()
    }

    public func mapValues<T>(_ transform: (Value) throws -> T) rethrows -> [ItemID: T] {
        var mapped: [ItemID: T] = [:]
        mapped.reserveCapacity(count)
        for (id, value) in zip(keys, values) { mapped[id] = try transform(value) }
        return mapped
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
