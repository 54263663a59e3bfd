import Synchronization

/// How many connections each client address has open, so that one address cannot hold every socket the
/// server has (slow clients that open thousands of connections and send nothing).
final class ConnectionsPerAddress: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    /// Counts a new connection from `address`; false (and not counted) when it already has `limit`.
    func admit(_ address: String, limit: Int) -> Bool {
        counts.withLock { counts in
            let open = counts[address, default: 0]
            guard open < limit else { return false }
            counts[address] = open + 1
            return true
        }
    }

    func release(_ address: String) {
        counts.withLock { counts in
            let open = counts[address, default: 1] - 1
            counts[address] = open > 0 ? open : nil
        }
    }
}
