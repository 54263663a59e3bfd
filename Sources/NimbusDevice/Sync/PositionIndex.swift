/// Positions in a collection, found by a key of each element: the positions sorted by key, 16 bytes an element. A
/// dictionary sizes its storage for a load of at most three quarters, in powers of two, each slot as large as its key
/// and value: at 100,000 items a round's indexes of places, inodes and paths were 4–13 MB each.
struct PositionIndex: Sendable {
    private struct Entry {
        var key: Int
        var position: UInt32
    }
    private let entries: [Entry]

    /// The positions `0..<count`, each under `key(position)`.
    init(count: Int, key: (Int) -> Int) {
        precondition(count <= UInt32.max, "a position index holds fewer than 2^32 positions")
        var entries = (0..<count).map { Entry(key: key($0), position: UInt32($0)) }
        entries.sort { ($0.key, $0.position) < ($1.key, $1.position) }
        self.entries = entries
    }

    /// The first position under `key` for which `matches` holds (where keys are hashes, others meet by chance).
    func first(_ key: Int, where matches: (Int) -> Bool = { _ in true }) -> Int? {
        var (low, high) = (0, entries.count)
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].key < key { low = middle + 1 } else { high = middle }
        }
        for entry in entries[low...] {
            guard entry.key == key else { break }
            if matches(Int(entry.position)) { return Int(entry.position) }
        }
        return nil
    }
}
