import Foundation
import NimbusCore

/// Errors a backend reports in terms of the model, never of its SQL.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A unique thing (email, team, app, container) already exists.
    case duplicate(String)
    /// A thing the operation names does not exist.
    case missing(String)
    /// The database was written by a newer Nimbus than this binary; opening it could corrupt it.
    case newerDatabase(unknownMigrations: [String])

    public var description: String {
        switch self {
        case .duplicate(let what): "\(what) already exists"
        case .missing(let what): "\(what) does not exist"
        case .newerDatabase(let migrations):
            "the database was written by a newer Nimbus (it has migrations \(migrations.joined(separator: ", ")) "
                + "that this version does not know); run that version or a later one"
        }
    }
}

/// Accounts, their devices and sessions.
public protocol AccountStore: Sendable {
    func createAccount(_ account: AccountRecord) async throws
    func account(email: String) async throws -> AccountRecord?
    func account(id: String) async throws -> AccountRecord?
    func accounts() async throws -> [AccountRecord]
    func administratorCount() async throws -> Int

    /// Creates the device or, when it exists for the same account, renames it and marks it seen.
    func saveDevice(_ device: DeviceRecord) async throws
    func device(id: String) async throws -> DeviceRecord?
    func devices(accountID: String) async throws -> [DeviceRecord]
    func markDeviceSeen(id: String, at date: Date) async throws

    func createSession(_ session: SessionRecord) async throws
    func revokeSession(tokenDigest: String) async throws

    /// Everything a request's credentials name, read together (one round trip on the hot path):
    /// the session, the API token, and the token's app with its entitlements.
    func credentials(sessionDigest: String?, apiTokenDigest: String?) async throws -> StoredCredentials
}

/// Teams, apps, containers, entitlements and API tokens.
public protocol DeveloperStore: Sendable {
    func createTeam(_ team: Team) async throws
    func teams() async throws -> [Team]
    func createApp(_ app: App) async throws
    func app(bundleID: String) async throws -> App?
    func apps() async throws -> [App]
    func createContainer(_ container: Container) async throws
    func container(identifier: String) async throws -> Container?
    func containers() async throws -> [Container]
    func entitle(bundleID: String, container: String) async throws
    func revokeEntitlement(bundleID: String, container: String) async throws

    func createAPIToken(_ token: APITokenRecord) async throws
    func apiTokens() async throws -> [APITokenRecord]
    func revokeAPIToken(id: String) async throws
}

/// The substrate every service writes through: zones with a strictly increasing change sequence.
public protocol ZoneStore: Sendable {
    /// The zone's state, or nil when nothing was ever written to it.
    func zoneState(_ zone: ZoneKey) async throws -> ZoneState?

    /// Applies a batch atomically, creating the zone on first write.
    ///
    /// Each mutation gets the next sequence number, in order, in the same transaction as the write;
    /// removals leave tombstones. `check` sees the zone's totals as they would be after the batch and
    /// may throw to refuse it, in which case nothing changes.
    func commit(
        _ zone: ZoneKey, mutations: [EntryMutation], check: @escaping @Sendable (ZoneState) throws -> Void
    ) async throws -> ZoneState

    /// The live entries of a zone and the sequence they are current at.
    func liveEntries(_ zone: ZoneKey) async throws -> (entries: [Entry], state: ZoneState?)

    /// Entries changed after `sequence`, oldest first, at most `limit`; one row per key (latest state).
    func changes(_ zone: ZoneKey, after sequence: Int64, limit: Int) async throws -> ChangePage

    /// Records that a device has applied a zone up to `sequence` (never moves backwards).
    func recordWatermark(deviceID: String, zone: ZoneKey, sequence: Int64) async throws
    /// Each zone a device has acknowledged, with its watermark and the zone's current sequence.
    func watermarks(deviceID: String) async throws -> [(zone: ZoneAddress, applied: Int64, current: Int64)]
}

/// Everything Nimbus keeps besides blobs. A backend is done when it passes the conformance suite.
public typealias Store = AccountStore & DeveloperStore & ZoneStore
