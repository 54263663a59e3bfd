import NimbusStore
import Synchronization

/// Who holds each custom security role, per container environment: read from the store once and kept in
/// memory, since every public-database request asks; changes made through this server drop the copy.
final class RoleRegistry: Sendable {
    private let store: any Store
    /// By "container/environment": each account's roles. A change bumps the generation, so a read that
    /// began before it cannot put what it read back into the cache.
    private let cache = Mutex<(generation: Int, holders: [String: [String: Set<String>]])>((0, [:]))

    /// Tells the other nodes sharing the store that a membership changed.
    private let changed: @Sendable () -> Void

    init(store: any Store, changed: @escaping @Sendable () -> Void = {}) {
        self.store = store
        self.changed = changed
    }

    /// Drops every cached membership: another node changed one.
    func forgetAll() {
        cache.withLock {
            $0.generation += 1
            $0.holders = [:]
        }
    }

    /// Each account's custom roles in the container's environment.
    func holders(container: String, environment: RecordDatabase.Environment) async throws -> [String: Set<String>] {
        let key = container + "/" + environment.rawValue
        let (cached, generation) = cache.withLock { ($0.holders[key], $0.generation) }
        if let cached { return cached }
        var holders = [String: Set<String>]()
        for member in try await store.roleMembers(container: container, environment: environment.rawValue) {
            holders[member.accountID, default: []].insert(member.role)
        }
        let found = holders
        cache.withLock { if $0.generation == generation { $0.holders[key] = found } }
        return found
    }

    func setMember(_ membership: RoleMember, container: String, environment: RecordDatabase.Environment, member: Bool)
        async throws
    {
        try await store.setRoleMember(membership, container: container, environment: environment.rawValue, member: member)
        cache.withLock {
            $0.generation += 1
            $0.holders[container + "/" + environment.rawValue] = nil
        }
        changed()
    }
}
