import Foundation
import NimbusStore
import Synchronization

/// Remembers what credentials resolved to for a moment, sparing the database a read per request.
///
/// Anything this server does that changes what a credential grants (sign-out, token revocation,
/// entitlement changes) calls `invalidateAll()`, so within one server such changes take effect at
/// once; `lifetime` bounds how long a change made elsewhere (another process on the same database)
/// can go unseen. Expiry is never cached: the session's expiry date is checked on every request.
final class CredentialCache: Sendable {
    private struct Key: Hashable {
        var sessionDigest: String?
        var apiTokenDigest: String?
    }

    private struct Entry {
        var credentials: StoredCredentials
        var storedAt: ContinuousClock.Instant
    }

    private let entries = Mutex<[Key: Entry]>([:])
    private let lifetime: Duration
    private let capacity = 10_000

    init(lifetime: Duration) { self.lifetime = lifetime }

    func credentials(
        sessionDigest: String?, apiTokenDigest: String?, load: () async throws -> StoredCredentials
    ) async throws -> StoredCredentials {
        let key = Key(sessionDigest: sessionDigest, apiTokenDigest: apiTokenDigest)
        let now = ContinuousClock.now
        if let entry = entries.withLock({ $0[key] }), now - entry.storedAt < lifetime { return entry.credentials }
        let credentials = try await load()
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(credentials: credentials, storedAt: now)
        }
        return credentials
    }

    func invalidateAll() { entries.withLock { $0.removeAll() } }
}
