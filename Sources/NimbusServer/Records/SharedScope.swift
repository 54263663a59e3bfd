import NimbusCore
import NimbusStore

/// What a zone's owner shared with the caller: the whole zone (a zone share), or the hierarchies of some
/// share records, each with its own permission.
enum SharedScope: Sendable, Equatable {
    case zone(ZoneGrant.Permission)
    case hierarchies([String: ZoneGrant.Permission])

    /// The scope the caller's accepted grants of one zone give; nil when they give nothing.
    init?(grants: [ZoneGrant]) {
        let accepted = grants.filter(\.accepted)
        if let zone = accepted.first(where: { $0.scope == RecordService.zoneShareName }) {
            self = .zone(zone.permission)
        } else if accepted.isEmpty {
            return nil
        } else {
            self = .hierarchies(Dictionary(accepted.map { ($0.scope, $0.permission) }, uniquingKeysWith: { $1 }))
        }
    }

    /// The most the caller may do with some record of the zone.
    var widest: ZoneGrant.Permission {
        switch self {
        case .zone(let permission): permission
        case .hierarchies(let shares): shares.values.contains(.readWrite) ? .readWrite : .read
        }
    }

    /// The caller's permission on a record the share `share` covers (nil: the record is not shared with them).
    func permission(covering share: String?) -> ZoneGrant.Permission? {
        switch self {
        case .zone(let permission): permission
        case .hierarchies(let shares): share.flatMap { shares[$0] }
        }
    }

    /// Whether the caller sees the record an entry holds now.
    func sees(_ entry: Entry) -> Bool { permission(covering: ShareMembership(audience: entry.audience).current) != nil }

    /// Whether the caller may learn of a record with this membership at all, now or as a deletion.
    func reaches(_ membership: ShareMembership) -> Bool {
        switch self {
        case .zone: true
        case .hierarchies(let shares): membership.all.contains { shares[$0] != nil }
        }
    }
}

extension SharedScope {
    /// What the caller's view of the zone is made of; change tokens carry its digest.
    private var digest: String {
        switch self {
        case .zone: String(Secrets.digest("zone").prefix(16))
        case .hierarchies(let shares):
            String(Secrets.digest("shares\n" + shares.keys.sorted().joined(separator: "\n")).prefix(16))
        }
    }

    /// A change token of the zone as this caller sees it: the zone's token and the digest of what was
    /// shared with them. Once a share is added, removed or left, their view holds other records than
    /// their feed delivered, so their old tokens expire and they fetch the zone again.
    func token(_ token: ChangeToken) -> String { "p1." + digest + "." + token.encoded }

    func changeToken(_ text: String) throws(NimbusError) -> ChangeToken {
        let parts = text.split(separator: ".", maxSplits: 2)
        guard parts.count == 3, parts[0] == "p1" else { throw .badRequest("syncToken is not a token this server issued") }
        guard parts[1] == digest else {
            throw NimbusError(
                .changeTokenExpired,
                "what is shared with you in this zone changed since this syncToken; fetch again without a token")
        }
        return try ChangeToken(encoded: String(parts[2]))
    }
}
