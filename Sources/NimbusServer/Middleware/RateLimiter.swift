import Foundation
import Synchronization

/// Token buckets keyed by caller (a session, an API token, an email address).
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    /// Beyond this many callers, full buckets are forgotten: a full bucket is the same as no bucket.
    private let pruneThreshold = 100_000

    /// Takes one token from `key`'s bucket; returns nil when allowed, or the seconds until it would be.
    func take(_ key: String, limit: RateLimit, now: Date) -> Double? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: limit.burst, updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(limit.burst, bucket.tokens + elapsed * limit.perSecond)
            bucket.updated = now
            defer {
                buckets[key] = bucket
                if buckets.count > pruneThreshold { prune(&buckets, now: now, limit: limit) }
            }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return (1 - bucket.tokens) / limit.perSecond
        }
    }

    private func prune(_ buckets: inout [String: Bucket], now: Date, limit: RateLimit) {
        buckets = buckets.filter { $0.value.tokens + now.timeIntervalSince($0.value.updated) * limit.perSecond < limit.burst }
    }
}
