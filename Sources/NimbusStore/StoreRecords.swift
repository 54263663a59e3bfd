import Foundation
import NimbusCore

/// An account (a user, like an Apple ID).
public struct AccountRecord: Sendable, Hashable {
    public var id: String
    public var email: String
    public var passwordHash: String
    public var isAdministrator: Bool
    public var createdAt: Date
    /// What the user chose to tell others, and whether others may find them by email, phone or id.
    public var profile: AccountProfile

    public init(
        id: String, email: String, passwordHash: String, isAdministrator: Bool, createdAt: Date,
        profile: AccountProfile = AccountProfile()
    ) {
        self.id = id
        self.email = email
        self.passwordHash = passwordHash
        self.isAdministrator = isAdministrator
        self.createdAt = createdAt
        self.profile = profile
    }
}

public struct DeviceRecord: Sendable, Hashable {
    public var id: String
    public var accountID: String
    public var name: String
    public var lastSeenAt: Date

    public init(id: String, accountID: String, name: String, lastSeenAt: Date) {
        self.id = id
        self.accountID = accountID
        self.name = name
        self.lastSeenAt = lastSeenAt
    }
}

/// A session; the token itself is never stored, only its digest.
public struct SessionRecord: Sendable, Hashable {
    public var tokenDigest: String
    public var accountID: String
    public var deviceID: String
    public var expiresAt: Date
    public var revoked: Bool

    public init(tokenDigest: String, accountID: String, deviceID: String, expiresAt: Date, revoked: Bool = false) {
        self.tokenDigest = tokenDigest
        self.accountID = accountID
        self.deviceID = deviceID
        self.expiresAt = expiresAt
        self.revoked = revoked
    }
}

/// An app's credential for one container; the token itself is never stored, only its digest.
public struct APITokenRecord: Sendable, Hashable {
    public var id: String
    public var tokenDigest: String
    public var containerID: String
    public var bundleID: String
    public var name: String
    public var revoked: Bool

    public init(id: String, tokenDigest: String, containerID: String, bundleID: String, name: String, revoked: Bool = false) {
        self.id = id
        self.tokenDigest = tokenDigest
        self.containerID = containerID
        self.bundleID = bundleID
        self.name = name
        self.revoked = revoked
    }

    public var info: APITokenInfo {
        APITokenInfo(tokenID: id, container: containerID, bundleID: bundleID, name: name, revoked: revoked)
    }
}

/// A server-to-server key: a public key whose signed requests act as its creator in a container.
public struct ServerKeyRecord: Sendable, Hashable {
    public var id: String
    public var container: String
    public var publicKeyPEM: String
    public var creatorAccountID: String
    public var name: String
    public var revoked: Bool

    public init(
        id: String, container: String, publicKeyPEM: String, creatorAccountID: String, name: String, revoked: Bool = false
    ) {
        self.id = id
        self.container = container
        self.publicKeyPEM = publicKeyPEM
        self.creatorAccountID = creatorAccountID
        self.name = name
        self.revoked = revoked
    }

    public var info: ServerKeyInfo {
        ServerKeyInfo(keyID: id, container: container, name: name, creator: creatorAccountID, revoked: revoked)
    }
}

/// An asset upload: granted by `assets/upload`, completed when its bytes arrive, then redeemable by its
/// uploader with the receipt it returned.
public struct AssetUploadRecord: Sendable, Hashable {
    public var id: String
    public var owner: String
    public var container: String
    public var expiresAt: Date
    public var blob: StoredBlob?
    public var receiptDigest: String?

    public init(
        id: String, owner: String, container: String, expiresAt: Date, blob: StoredBlob? = nil, receiptDigest: String? = nil
    ) {
        self.id = id
        self.owner = owner
        self.container = container
        self.expiresAt = expiresAt
        self.blob = blob
        self.receiptDigest = receiptDigest
    }
}

/// Another account's access to a zone (what sharing grants): read, or read and write, once the grantee
/// has accepted. A zone's grants come in scopes the service names (a share each); an account may hold
/// grants of several scopes of one zone.
public struct ZoneGrant: Sendable, Hashable {
    public enum Permission: String, Sendable { case read, readWrite }
    public var scope: String
    public var grantee: String
    public var permission: Permission
    public var accepted: Bool

    public init(scope: String, grantee: String, permission: Permission, accepted: Bool = false) {
        self.scope = scope
        self.grantee = grantee
        self.permission = permission
        self.accepted = accepted
    }
}

/// A zone someone granted an account access to.
public struct GrantedZone: Sendable, Hashable {
    public var owner: String
    public var name: String
    public var grant: ZoneGrant
    public var state: ZoneState

    public init(owner: String, name: String, grant: ZoneGrant, state: ZoneState) {
        self.owner = owner
        self.name = name
        self.grant = grant
        self.state = state
    }
}

/// A device's acknowledgement: it has applied the zone's changes up to `sequence`.
public struct DeviceWatermark: Sendable, Hashable {
    public var deviceID: String
    public var zone: ZoneKey
    public var sequence: Int64

    public init(deviceID: String, zone: ZoneKey, sequence: Int64) {
        self.deviceID = deviceID
        self.zone = zone
        self.sequence = sequence
    }
}

/// A zone of one owner: the unit of atomic commits and change tracking.
public struct ZoneKey: Sendable, Hashable {
    /// The owning account's id, or a principal that is not an account (a container's public database).
    public var accountID: String
    public var address: ZoneAddress

    public init(accountID: String, address: ZoneAddress) {
        self.accountID = accountID
        self.address = address
    }
}

/// Where a zone stands: its latest sequence and what it holds.
public struct ZoneState: Sendable, Hashable {
    /// The zone's internal id; change tokens carry it.
    public var id: Int64
    public var sequence: Int64
    public var liveEntries: Int
    public var liveBytes: Int

    public init(id: Int64, sequence: Int64, liveEntries: Int, liveBytes: Int) {
        self.id = id
        self.sequence = sequence
        self.liveEntries = liveEntries
        self.liveBytes = liveBytes
    }

    public var token: ChangeToken { ChangeToken(zoneID: id, sequence: sequence) }
}

/// A write to one entry of a zone: a new payload, or a tombstone when `payload` is nil.
public struct EntryMutation: Sendable, Hashable {
    public var key: String
    public var payload: Data?
    /// What the payload counts for against the zone's byte total.
    public var size: Int

    public init(key: String, payload: Data?, size: Int) {
        self.key = key
        self.payload = payload
        self.size = size
    }
}

/// An entry as the change feed returns it: its latest payload, or nil for a tombstone.
public struct Entry: Sendable, Hashable {
    public var key: String
    public var payload: Data?
    public var sequence: Int64
    /// A label the service keeps with the entry, tombstones included (who may learn of the entry).
    public var audience: String?

    public init(key: String, payload: Data?, sequence: Int64, audience: String? = nil) {
        self.key = key
        self.payload = payload
        self.sequence = sequence
        self.audience = audience
    }
}

/// One page of "changes since": entries in sequence order, then where the next page starts.
public struct ChangePage: Sendable, Hashable {
    public var entries: [Entry]
    /// Where to resume, read together with the entries: the last entry's sequence, or the zone's own
    /// when nothing more is coming (zone 0, sequence 0 while the zone does not exist yet).
    public var token: ChangeToken
    public var moreComing: Bool

    public init(entries: [Entry], token: ChangeToken, moreComing: Bool) {
        self.entries = entries
        self.token = token
        self.moreComing = moreComing
    }
}

/// A zone of an account's service and where it stands.
public struct ZoneSummary: Sendable, Hashable {
    public var name: String
    public var state: ZoneState

    public init(name: String, state: ZoneState) {
        self.name = name
        self.state = state
    }
}

/// Zones changed since a service-wide sequence: each zone once, with whether it was deleted.
public struct ZoneChangePage: Sendable, Hashable {
    public struct Change: Sendable, Hashable {
        public var name: String
        public var deleted: Bool

        public init(name: String, deleted: Bool) {
            self.name = name
            self.deleted = deleted
        }
    }

    public var changes: [Change]
    /// Where to resume: the last change's sequence, or the service's own when nothing more is coming.
    public var sequence: Int64
    public var moreComing: Bool

    public init(changes: [Change], sequence: Int64, moreComing: Bool) {
        self.changes = changes
        self.sequence = sequence
        self.moreComing = moreComing
    }
}

/// What a request's credentials resolve to; nil where a credential was not given or is unknown.
public struct StoredCredentials: Sendable, Hashable {
    public var session: SessionRecord?
    public var apiToken: APITokenRecord?
    /// The API token's app, with its current entitlements.
    public var app: App?

    public init(session: SessionRecord?, apiToken: APITokenRecord?, app: App?) {
        self.session = session
        self.apiToken = apiToken
        self.app = app
    }
}

/// An account holding a custom security role.
public struct RoleMember: Sendable, Hashable {
    public var role: String
    public var accountID: String

    public init(role: String, accountID: String) {
        self.role = role
        self.accountID = accountID
    }
}
