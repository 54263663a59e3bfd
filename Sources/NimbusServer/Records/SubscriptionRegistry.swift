import Foundation
import NimbusCore
import NimbusStore
import Synchronization

/// The subscriptions of every database, kept in the store and cached in memory per database, so that a
/// write finds the subscriptions it may fire without a query.
///
/// All subscriptions of one database (every subscriber's) are the entries of one substrate zone, keyed by
/// subscriber and subscription ID.
final class SubscriptionRegistry: Sendable {
    struct Stored: Codable, Sendable {
        var subscriber: String
        var subscription: Subscription
    }

    private let store: any Store
    /// By database. A change bumps the generation, so a read that began before it cannot put what it
    /// read back into the cache.
    private let cache = Mutex<(generation: Int, subscriptions: [ZoneAddress.Service: [Stored]])>((0, [:]))
    /// The owner of the zones holding subscriptions: not an account.
    static let owner = "_subscriptions"

    init(store: any Store, changed: @escaping @Sendable () -> Void = {}) {
        self.store = store
        self.changed = changed
    }

    /// The shared database's subscriptions are its own, apart from the private database its zones live in.
    /// Tells the other nodes sharing the store that subscriptions changed.
    private let changed: @Sendable () -> Void

    /// Drops every cached subscription: another node changed some.
    func forgetAll() {
        cache.withLock {
            $0.generation += 1
            $0.subscriptions = [:]
        }
    }

    private static func service(_ database: RecordDatabase) -> ZoneAddress.Service {
        .recordSubscriptions(
            container: database.container, environment: database.environment.rawValue, database: database.scope.rawValue)
    }

    private func zone(_ database: RecordDatabase) -> ZoneKey {
        ZoneKey(accountID: Self.owner, address: ZoneAddress(service: Self.service(database), name: "all"))
    }

    private static func key(subscriber: String, id: String) -> String { subscriber + "/" + id }

    /// Every subscription of the database, whoever made it.
    func all(_ database: RecordDatabase) async throws -> [Stored] {
        let service = Self.service(database)
        let (cached, generation) = cache.withLock { ($0.subscriptions[service], $0.generation) }
        if let cached { return cached }
        let entries = try await store.liveEntries(zone(database)).entries
        let stored = try entries.map { try JSONDecoder().decode(Stored.self, from: $0.payload ?? Data()) }
        cache.withLock { if $0.generation == generation { $0.subscriptions[service] = stored } }
        return stored
    }

    func subscriptions(of subscriber: String, in database: RecordDatabase) async throws -> [Subscription] {
        try await all(database).filter { $0.subscriber == subscriber }.map(\.subscription)
    }

    /// Saves (nil: deletes) subscriptions of one subscriber in one commit.
    func save(_ changes: [(id: String, subscription: Subscription?)], subscriber: String, in database: RecordDatabase)
        async throws
    {
        let mutations = try changes.map { change in
            let payload = try change.subscription.map {
                try JSONEncoder().encode(Stored(subscriber: subscriber, subscription: $0))
            }
            return EntryMutation(
                key: Self.key(subscriber: subscriber, id: change.id), payload: payload, size: payload?.count ?? 0)
        }
        _ = try await store.commit(zone(database), mutations: mutations) { _ in }
        cache.withLock {
            $0.generation += 1
            $0.subscriptions[Self.service(database)] = nil
        }
        changed()
    }
}
