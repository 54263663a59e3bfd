import Foundation
import NimbusCore

/// An account (a user, like an Apple ID).
package struct AccountRecord: Sendable, Hashable {
    package var id: String
    package var email: String
    package var passwordHash: String
    package var isAdministrator: Bool
    package var createdAt: Date
    /// What the user chose to tell others, and whether others may find them by email, phone or id.
    package var profile: AccountProfile

    package init(
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

package struct DeviceRecord: Sendable, Hashable {
    package var id: String
    package var accountID: String
    package var name: String
    package var lastSeenAt: Date

    package init(id: String, accountID: String, name: String, lastSeenAt: Date) {
        self.id = id
        self.accountID = accountID
        self.name = name
        self.lastSeenAt = lastSeenAt
    }
}

/// A session; the token itself is never stored, only its digest.
package struct SessionRecord: Sendable, Hashable {
    package var tokenDigest: String
    package var accountID: String
    package var deviceID: String
    package var expiresAt: Date
    package var revoked: Bool

    package init(tokenDigest: String, accountID: String, deviceID: String, expiresAt: Date, revoked: Bool = false) {
        self.tokenDigest = tokenDigest
        self.accountID = accountID
        self.deviceID = deviceID
        self.expiresAt = expiresAt
        self.revoked = revoked
    }
}

/// An app's credential for one container; the token itself is never stored, only its digest.
package struct APITokenRecord: Sendable, Hashable {
    package var id: String
    package var tokenDigest: String
    package var containerID: String
    package var bundleID: String
    package var name: String
    package var revoked: Bool
    /// The web origins (`https://app.example.com`) whose pages may use the token, as CloudKit's "allowed
    /// origins"; empty: any. A browser names its page's origin in every request, so a token copied out of
    /// one site's script cannot be used from another's.
    package var allowedOrigins: [String]

    package init(
        id: String, tokenDigest: String, containerID: String, bundleID: String, name: String, revoked: Bool = false,
        allowedOrigins: [String] = []
    ) {
        self.id = id
        self.tokenDigest = tokenDigest
        self.containerID = containerID
        self.bundleID = bundleID
        self.name = name
        self.revoked = revoked
        self.allowedOrigins = allowedOrigins
    }

    package var info: APITokenInfo {
        APITokenInfo(
            tokenID: id, container: containerID, bundleID: bundleID, name: name, revoked: revoked, allowedOrigins: allowedOrigins)
    }

    /// Whether a request sent from `origin` (its `Origin` header; nil when not sent by a browser) may use it.
    package func allows(origin: String?) -> Bool {
        guard let origin, !allowedOrigins.isEmpty else { return true }
        return allowedOrigins.contains(origin.lowercased())
    }

    /// An origin as browsers send it: `http` or `https`, a host, a port when not the scheme's own, nothing else.
    package static func validate(origin: String) throws(NimbusError) {
        let parts = origin.split(separator: "://", maxSplits: 1).map(String.init)
        guard parts.count == 2, ["http", "https"].contains(parts[0]), !parts[1].isEmpty, origin == origin.lowercased(),
            parts[1].allSatisfy({ $0.isLetter || $0.isNumber || "-.:[]".contains($0) }), origin.utf8.count <= 200
        else {
            throw .badRequest("allowed origin \"\(origin.prefix(80))\" is not like https://app.example.com (lower case, no path)")
        }
    }

    /// The origins as stored: one a line.
    package var storedOrigins: String { allowedOrigins.joined(separator: "\n") }

    package static func origins(stored: String) -> [String] { stored.split(separator: "\n").map(String.init) }
}

/// A server-to-server key: a public key whose signed requests act as its creator in a container.
package struct ServerKeyRecord: Sendable, Hashable {
    package var id: String
    package var container: String
    package var publicKeyPEM: String
    package var creatorAccountID: String
    package var name: String
    package var revoked: Bool

    package init(
        id: String, container: String, publicKeyPEM: String, creatorAccountID: String, name: String, revoked: Bool = false
    ) {
        self.id = id
        self.container = container
        self.publicKeyPEM = publicKeyPEM
        self.creatorAccountID = creatorAccountID
        self.name = name
        self.revoked = revoked
    }

    package var info: ServerKeyInfo {
        ServerKeyInfo(keyID: id, container: container, name: name, creator: creatorAccountID, revoked: revoked)
    }
}

/// An asset upload: granted by `assets/upload`, completed when its bytes arrive, then redeemable by its
/// uploader with the receipt it returned.
package struct AssetUploadRecord: Sendable, Hashable {
    package var id: String
    package var owner: String
    package var container: String
    package var expiresAt: Date
    package var blob: StoredBlob?
    package var receiptDigest: String?

    package init(
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
package struct ZoneGrant: Sendable, Hashable {
    package enum Permission: String, Sendable { case read, readWrite }
    package var scope: String
    package var grantee: String
    package var permission: Permission
    package var accepted: Bool

    package init(scope: String, grantee: String, permission: Permission, accepted: Bool = false) {
        self.scope = scope
        self.grantee = grantee
        self.permission = permission
        self.accepted = accepted
    }
}

/// A zone someone granted an account access to.
package struct GrantedZone: Sendable, Hashable {
    package var owner: String
    package var name: String
    package var grant: ZoneGrant
    package var state: ZoneState

    package init(owner: String, name: String, grant: ZoneGrant, state: ZoneState) {
        self.owner = owner
        self.name = name
        self.grant = grant
        self.state = state
    }
}

/// A device's acknowledgement: it has applied the zone's changes up to `sequence`.
package struct DeviceWatermark: Sendable, Hashable {
    package var deviceID: String
    package var zone: ZoneKey
    package var sequence: Int64

    package init(deviceID: String, zone: ZoneKey, sequence: Int64) {
        self.deviceID = deviceID
        self.zone = zone
        self.sequence = sequence
    }
}

/// A zone of one owner: the unit of atomic commits and change tracking.
package struct ZoneKey: Sendable, Hashable {
    /// The owning account's id, or a principal that is not an account (a container's public database).
    package var accountID: String
    package var address: ZoneAddress

    package init(accountID: String, address: ZoneAddress) {
        self.accountID = accountID
        self.address = address
    }
}

/// Where a zone stands: its latest sequence and what it holds.
package struct ZoneState: Sendable, Hashable {
    /// The zone's internal id; change tokens carry it.
    package var id: Int64
    package var sequence: Int64
    package var liveEntries: Int
    package var liveBytes: Int
    package var history: SequenceHistory

    package init(id: Int64, sequence: Int64, liveEntries: Int, liveBytes: Int, history: SequenceHistory = .original) {
        self.id = id
        self.sequence = sequence
        self.liveEntries = liveEntries
        self.liveBytes = liveBytes
        self.history = history
    }

    package var token: ChangeToken { ChangeToken(zoneID: id, sequence: sequence, epoch: history.epoch) }
}

/// Which history a change sequence is in. Restoring a backup loses the changes made after it, and the
/// sequence numbers they had are given to new changes: each restore starts a new epoch (a random number,
/// so restoring one backup twice starts two), and a position handed out in an earlier epoch is still good
/// only if the backup held it.
package struct SequenceHistory: Sendable, Hashable {
    /// The epoch the sequence is in: 0 until a restore.
    package var epoch: Int64
    /// The epoch the restored backup's sequence was in, and where it stood; nil when the sequence began
    /// after the last restore (or there was none).
    package var previousEpoch: Int64?
    package var restoredSequence: Int64?

    package static let original = SequenceHistory(epoch: 0, previousEpoch: nil, restoredSequence: nil)

    package init(epoch: Int64, previousEpoch: Int64?, restoredSequence: Int64?) {
        self.epoch = epoch
        self.previousEpoch = previousEpoch
        self.restoredSequence = restoredSequence
    }

    /// Whether a position `sequence` handed out in `epoch` lies in this history, now at `current`. A
    /// position from the restored backup's epoch counts if the backup reached it; from any other epoch,
    /// never (a client resyncs rather than risk missing changes).
    package func holds(_ sequence: Int64, epoch: Int64, current: Int64) -> Bool {
        if epoch == self.epoch { return sequence <= current }
        if epoch == previousEpoch, let restoredSequence { return sequence <= restoredSequence }
        return false
    }
}

/// A write to one entry of a zone: a new payload, or a tombstone when `payload` is nil.
package struct EntryMutation: Sendable, Hashable {
    package var key: String
    package var payload: Data?
    /// What the payload counts for against the zone's byte total.
    package var size: Int

    package init(key: String, payload: Data?, size: Int) {
        self.key = key
        self.payload = payload
        self.size = size
    }
}

/// An entry as the change feed returns it: its latest payload, or nil for a tombstone.
package struct Entry: Sendable, Hashable {
    package var key: String
    package var payload: Data?
    package var sequence: Int64
    /// A label the service keeps with the entry, tombstones included (who may learn of the entry).
    package var audience: String?

    package init(key: String, payload: Data?, sequence: Int64, audience: String? = nil) {
        self.key = key
        self.payload = payload
        self.sequence = sequence
        self.audience = audience
    }
}

/// One page of "changes since": entries in sequence order, then where the next page starts.
package struct ChangePage: Sendable, Hashable {
    package var entries: [Entry]
    /// Where to resume, read together with the entries: the last entry's sequence, or the zone's own
    /// when nothing more is coming (zone 0, sequence 0 while the zone does not exist yet).
    package var token: ChangeToken
    package var moreComing: Bool

    package init(entries: [Entry], token: ChangeToken, moreComing: Bool) {
        self.entries = entries
        self.token = token
        self.moreComing = moreComing
    }
}

/// A zone of an account's service and where it stands.
/// What an account holds in one container (or, with no container, in its key-value stores).
package struct StorageUsage: Sendable, Hashable {
    package var accountID: String
    package var container: String?
    package var bytes: Int
    package var zones: Int

    package init(accountID: String, container: String?, bytes: Int, zones: Int) {
        self.accountID = accountID
        self.container = container
        self.bytes = bytes
        self.zones = zones
    }
}

package struct ZoneSummary: Sendable, Hashable {
    package var name: String
    package var state: ZoneState

    package init(name: String, state: ZoneState) {
        self.name = name
        self.state = state
    }
}

/// Zones changed since a service-wide sequence: each zone once, with whether it was deleted.
package struct ZoneChangePage: Sendable, Hashable {
    package struct Change: Sendable, Hashable {
        package var name: String
        package var deleted: Bool

        package init(name: String, deleted: Bool) {
            self.name = name
            self.deleted = deleted
        }
    }

    package var changes: [Change]
    /// Where to resume: the last change's sequence, or the service's own when nothing more is coming.
    package var sequence: Int64
    package var moreComing: Bool
    /// The service's sequence now, and its history.
    package var current: Int64
    package var history: SequenceHistory

    package init(changes: [Change], sequence: Int64, moreComing: Bool, current: Int64, history: SequenceHistory = .original) {
        self.changes = changes
        self.sequence = sequence
        self.moreComing = moreComing
        self.current = current
        self.history = history
    }
}

/// What a request's credentials resolve to; nil where a credential was not given or is unknown.
package struct StoredCredentials: Sendable, Hashable {
    package var session: SessionRecord?
    package var apiToken: APITokenRecord?
    /// The API token's app, with its current entitlements.
    package var app: App?

    package init(session: SessionRecord?, apiToken: APITokenRecord?, app: App?) {
        self.session = session
        self.apiToken = apiToken
        self.app = app
    }
}

/// An account holding a custom security role.
package struct RoleMember: Sendable, Hashable {
    package var role: String
    package var accountID: String

    package init(role: String, accountID: String) {
        self.role = role
        self.accountID = accountID
    }
}
