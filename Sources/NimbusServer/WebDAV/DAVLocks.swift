import Foundation
import NimbusCore
import NimbusStore

/// A WebDAV write lock (RFC 4918 §6) on a path of a container: kept in the documents zone, so every node
/// sharing the database sees and honours it, and a lock taken and a conflicting one asked for at the same
/// moment on two nodes cannot both be granted (the zone's transactions are serial).
struct DAVLock: Codable, Sendable, Hashable {
    var token: String
    /// The path locked, as the client named it.
    var path: [String]
    var depthInfinity: Bool
    var exclusive: Bool
    /// The `owner` element the client sent, as XML.
    var owner: String?
    var timeoutSeconds: Int
    /// Milliseconds since 1970.
    var expiresAt: Int64

    /// Paths compare by names' collision keys, as the document service finds items.
    var key: String { DAVLock.key(path) }
    static func key(_ path: [String]) -> String { path.map(DocumentNames.collisionKey).joined(separator: "/") }

    /// Whether this lock holds `key` itself (its own path, or below it for a lock of infinite depth).
    func covers(_ key: String) -> Bool {
        let own = self.key
        return own == key || (depthInfinity && (own.isEmpty || key.hasPrefix(own + "/")))
    }

    /// Whether the lock lies on `key` or anywhere below it.
    func lies(within key: String) -> Bool {
        let own = self.key
        return own == key || key.isEmpty || own.hasPrefix(key + "/")
    }
}

/// What a write must find in the commit that makes it: no lock on what it changes but ones whose tokens the
/// request submitted. Checked inside that commit, so a lock granted meanwhile, on any node, is honoured.
struct DAVWriteGuard: Sendable {
    struct Target: Sendable {
        var path: [String]
        /// The folder's members change (a name comes or goes): a lock on the folder guards it too.
        var membership = false
        /// The change reaches everything below the path: a lock down there guards it too.
        var subtree = false
    }

    var targets: [Target]
    var submitted: Set<String>
    /// Milliseconds since 1970, read when the commit checks: a lock that expired while a long upload arrived
    /// guards nothing by then.
    var now: @Sendable () -> Int64

    func check(in transaction: any ZoneTransaction) throws { try check(DAVLocks.held(in: transaction)) }

    func check(_ locks: [DAVLock]) throws {
        let now = now()
        let live = locks.filter { $0.expiresAt > now }
        guard !live.isEmpty else { return }
        for target in targets {
            let key = DAVLock.key(target.path)
            var guarded: Set<String> = [key]
            if target.membership { guarded.insert(DAVLock.key(Array(target.path.dropLast()))) }
            if target.subtree { guarded.formUnion(live.map(\.key).filter { $0.hasPrefix(key + "/") }) }
            for resource in guarded {
                let holding = live.filter { $0.covers(resource) }
                guard !holding.isEmpty, !holding.contains(where: { submitted.contains($0.token) }) else { continue }
                throw DAVError.locked(
                    "/\(holding[0].path.joined(separator: "/")) is locked; submit its lock token in an If header")
            }
        }
    }
}

/// The zone's locks: read, granted, refreshed and released in the zone's own transactions.
struct DAVLocks: Sendable {
    let store: any Store
    let zone: ZoneKey
    let now: @Sendable () -> Int64

    static let maxLocksPerZone = 10_000
    /// Timeouts a client may ask for, in seconds (`Infinite` is granted as the longest).
    static let timeouts = 1...(7 * 86_400)
    static let defaultTimeout = 3600

    /// The zone's locks that have not expired.
    func all() async throws -> [DAVLock] {
        let matches = try await store.query(
            IndexQuery(
                zones: [zone], kind: DocumentKeys.davLockKind,
                conditions: [IndexCondition(field: "lock", .equal(.text("1")))], limit: Self.maxLocksPerZone))
        let decoder = JSONDecoder()
        let now = now()
        return try matches.compactMap { try $0.entry.payload.map { try decoder.decode(DAVLock.self, from: $0) } }
            .filter { $0.expiresAt > now }
    }

    /// Grants `lock` unless a lock already held conflicts with it (an exclusive one, or any when this one
    /// is exclusive) on its path, above it, or below it when it is of infinite depth; expired locks go.
    func grant(_ lock: DAVLock) async throws {
        let now = now()
        try await store.transact(zone, creating: true) { transaction in
            let held = try Self.held(in: transaction)
            for other in held where other.expiresAt <= now {
                try transaction.put(DocumentKeys.davLockPrefix + other.token, payload: nil, size: 0)
            }
            let live = held.filter { $0.expiresAt > now }
            guard live.count < Self.maxLocksPerZone else {
                throw DAVError(
                    DAVError.insufficientStorage, .quotaExceeded, "a container holds at most \(Self.maxLocksPerZone) locks")
            }
            let key = lock.key
            let conflicting = live.first { other in
                (other.exclusive || lock.exclusive)
                    && (other.covers(key) || (lock.depthInfinity && other.lies(within: key)))
            }
            if let conflicting {
                throw DAVError.locked("/\(conflicting.path.joined(separator: "/")) is locked already")
            }
            try Self.write(lock, in: transaction)
        }
    }

    /// Gives a held lock a new timeout; nil when no such lock is held.
    func refresh(token: String, timeoutSeconds: Int) async throws -> DAVLock? {
        let now = now()
        return try await store.transact(zone, creating: false) { transaction -> DAVLock? in
            guard var lock = try Self.lock(token, in: transaction), lock.expiresAt > now else { return nil }
            lock.timeoutSeconds = timeoutSeconds
            lock.expiresAt = now + Int64(timeoutSeconds) * 1000
            try Self.write(lock, in: transaction)
            return lock
        }.result
    }

    /// Releases a lock; false when it was not held.
    func release(token: String) async throws -> Bool {
        try await store.transact(zone, creating: false) { transaction -> Bool in
            guard try Self.lock(token, in: transaction) != nil else { return false }
            try transaction.put(DocumentKeys.davLockPrefix + token, payload: nil, size: 0)
            return true
        }.result
    }

    /// Releases every lock on `path` or below it (a resource deleted or moved away loses its locks).
    func releaseAll(within path: [String]) async throws {
        let key = DAVLock.key(path)
        guard try await all().contains(where: { $0.lies(within: key) }) else { return }
        try await store.transact(zone, creating: false) { transaction in
            for lock in try Self.held(in: transaction) where lock.lies(within: key) {
                try transaction.put(DocumentKeys.davLockPrefix + lock.token, payload: nil, size: 0)
            }
        }
    }

    /// Every lock the zone keeps, expired ones included, as the transaction sees them.
    static func held(in transaction: any ZoneTransaction) throws -> [DAVLock] {
        try transaction.keys(kind: DocumentKeys.davLockKind, field: "lock", value: .text("1")).compactMap { key in
            try lock(String(key.dropFirst(DocumentKeys.davLockPrefix.count)), in: transaction)
        }
    }

    private static func lock(_ token: String, in transaction: any ZoneTransaction) throws -> DAVLock? {
        guard let payload = try transaction.entry(DocumentKeys.davLockPrefix + token)?.payload else { return nil }
        return try JSONDecoder().decode(DAVLock.self, from: payload)
    }

    private static func write(_ lock: DAVLock, in transaction: any ZoneTransaction) throws {
        let key = DocumentKeys.davLockPrefix + lock.token
        try transaction.put(key, payload: try JSONEncoder().encode(lock), size: 0)
        try transaction.index(key, kind: DocumentKeys.davLockKind, rows: DocumentKeys.davLockRows)
    }
}
