import NimbusCore
import NimbusStore

/// What the caller may do with records of a type: everything in a database they own; in the public
/// database, what the type's grants give the roles they hold.
///
/// The built-in roles are CloudKit's: `_world` (anyone, signed in or not), `_icloud` (any signed-in user)
/// and `_creator` (the user who created the record); custom roles are held by the accounts an
/// administrator gave them. A type without grants gets CloudKit's defaults: everyone reads, signed-in
/// users create, the creator writes. WRITE includes READ.
struct RecordAccess: Sendable {
    let caller: String?
    let ownsDatabase: Bool
    /// The public database, where records of every user meet.
    let isPublic: Bool
    /// The custom roles the caller holds.
    let roles: Set<String>
    /// In a shared zone: what its owner shared with the caller. Checks here are for the zone as a whole;
    /// in a shared hierarchy each record is checked against its share (`SharedScope.permission(covering:)`).
    let shared: SharedScope?

    static let defaultGrants = [
        Schema.Grant([.read], to: "_world"), Schema.Grant([.create], to: "_icloud"), Schema.Grant([.write], to: "_creator"),
    ]

    init(_ database: RecordDatabase) {
        caller = database.caller?.userRecordName
        ownsDatabase = database.scope == .private
        isPublic = database.scope == .public
        roles = database.caller == nil ? [] : database.roles
        shared = database.scope == .shared ? database.shared : nil
    }

    func allows(_ permission: Schema.Grant.Permission, _ type: Schema.RecordType?, creator: String?) -> Bool {
        if let shared { return permission == .read || shared.widest == .readWrite }
        return ownsDatabase
            || Self.grants(type).contains { grant in
                (grant.permissions.contains(permission) || (permission == .read && grant.permissions.contains(.write)))
                    && holds(grant.role, creator: creator)
            }
    }

    /// In a shared hierarchy: the shares whose records the caller may see (nil: no such restriction).
    var hierarchies: [String: ZoneGrant.Permission]? {
        guard case .hierarchies(let shares) = shared else { return nil }
        return shares
    }

    /// Whether the caller may read every record of the type, or only those they created (or none).
    func readScope(_ type: Schema.RecordType?) -> ReadScope {
        if allows(.read, type, creator: nil) { return .all }
        return caller != nil && allows(.read, type, creator: caller) ? .ownRecords : .none
    }

    enum ReadScope { case all, ownRecords, none }

    private func holds(_ role: String, creator: String?) -> Bool {
        switch role {
        case "_world": true
        case "_icloud": caller != nil
        case "_creator": caller != nil && caller == creator
        default: roles.contains(role)
        }
    }

    private static func grants(_ type: Schema.RecordType?) -> [Schema.Grant] {
        guard let type, !type.grants.isEmpty else { return defaultGrants }
        return type.grants
    }
}
