import NimbusStore
import Synchronization

/// Who holds each custom security role, per container environment: read from the store once and kept in
/// memory, since every public-database request asks; changes made through this server drop the copy.
final class RoleRegistry: Sendable {
    private let store: any Store
    /// By "container/environment": each account's roles.
    private let cache = Mutex<[String: [String: Set<String>]]>([:])

    init(store: any Store) { self.store = store }

    /// Each account's custom roles in the container's environment.
    func holders(container: String, environment: RecordDatabase.Environment) async throws -> [String: Set<String>] {
        let key = container + "/" + environment.rawValue
        if let cached = cache.withLock({ $0[key] }) { return cached }
        var holders = [String: Set<String>]()
        for member in try await store.roleMembers(container: container, environment: environment.rawValue) {
            holders[member.accountID, default: []].insert(member.role)
        }
        let found = holders
        cache.withLock { $0[key] = found }
        return found
    }

    func setMember(_ membership: RoleMember, container: String, environment: RecordDatabase.Environment, member: Bool) async throws {
        try await store.setRoleMember(membership, container: container, environment: environment.rawValue, member: member)
        cache.withLock { $0[container + "/" + environment.rawValue] = nil }
    }
}
