import Foundation
import Synchronization

/// Remembers what a lookup in the database found for a moment, sparing the database a read per request.
///
/// Anything this server does that changes what a cached value says (sign-out, token revocation,
/// entitlement changes) calls `invalidateAll()`, so within one server such changes take effect at once;
/// `lifetime` bounds how long a change made elsewhere (another node on the same database) can go unseen.
/// Lookups that find nothing are not kept unless `keepsMisses`: what is created is then seen at once.
final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var value: Value?
        var storedAt: ContinuousClock.Instant
    }

    private let entries = Mutex<[Key: Entry]>([:])
    private let lifetime: Duration
    private let keepsMisses: Bool
    private let capacity = 10_000

    init(lifetime: Duration, keepsMisses: Bool) {
        self.lifetime = lifetime
        self.keepsMisses = keepsMisses
    }

    func value(for key: Key, load: () async throws -> Value?) async throws -> Value? {
        let now = ContinuousClock.now
        if let entry = entries.withLock({ $0[key] }), now - entry.storedAt < lifetime { return entry.value }
        let value = try await load()
        guard value != nil || keepsMisses else { return nil }
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(value: value, storedAt: now)
        }
        return value
    }

    func invalidateAll() { entries.withLock { $0.removeAll() } }
}

/// What a request's session token and API token are looked up by (their digests).
struct CredentialKey: Hashable, Sendable {
    var sessionDigest: String?
    var apiTokenDigest: String?
}
