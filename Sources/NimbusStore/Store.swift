import Foundation
import NimbusCore

/// Errors a backend reports in terms of the model, never of its SQL.
package enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A unique thing (email, team, app, container) already exists.
    case duplicate(String)
    /// A thing the operation names does not exist.
    case missing(String)
    /// The database was written by a newer Nimbus than this binary; opening it could corrupt it.
    case newerDatabase(unknownMigrations: [String])
    /// The disk holding the database is full: the write was rolled back whole.
    case storageFull
    /// The database server cannot be reached (restarting, failing over, out of connections), or was lost
    /// during the call: nothing was written, unless the connection was lost during the commit, which leaves
    /// it unknown. The same request later may succeed.
    case unavailable
    /// Text holding a NUL character, which PostgreSQL's text cannot hold (SQLite's can): nothing was written.
    case unstorableText
    /// A query was given a position (a continuation marker) that is not one of its own backend's positions
    /// for a query of its shape: nothing was read.
    case foreignPosition

    package var description: String {
        switch self {
        case .duplicate(let what): "\(what) already exists"
        case .missing(let what): "\(what) does not exist"
        case .newerDatabase(let migrations):
            "the database was written by a newer Nimbus (it has migrations \(migrations.joined(separator: ", ")) "
                + "that this version does not know); run that version or a later one"
        case .storageFull: "the disk holding the database is full"
        case .unavailable: "the database cannot be reached"
        case .unstorableText: "a text value holds a NUL character, which the database cannot store"
        case .foreignPosition: "the position does not belong to this query"
        }
    }
}

/// Accounts, their devices and sessions.
package protocol AccountStore: Sendable {
    func createAccount(_ account: AccountRecord) async throws
    func account(email: String) async throws -> AccountRecord?
    func account(id: String) async throws -> AccountRecord?
    func accounts() async throws -> [AccountRecord]
    func administratorCount() async throws -> Int
    func updateProfile(accountID: String, _ profile: AccountProfile) async throws
    /// The accounts that chose to be discoverable and match one of the emails (any case), phone numbers
    /// (as `AccountProfile.normalizedPhoneNumber` writes them) or ids; all of them, up to `limit`, when
    /// all three are nil.
    func discoverableAccounts(emails: [String]?, phoneNumbers: [String]?, ids: [String]?, limit: Int) async throws
        -> [AccountRecord]

    /// Creates the device or, when it exists for the same account, renames it and marks it seen.
    func saveDevice(_ device: DeviceRecord) async throws
    func device(id: String) async throws -> DeviceRecord?
    func devices(accountID: String) async throws -> [DeviceRecord]
    func markDeviceSeen(id: String, at date: Date) async throws

    func createSession(_ session: SessionRecord) async throws
    func revokeSession(tokenDigest: String) async throws
    /// Signs a device out everywhere: revokes every session it holds; how many were still valid.
    @discardableResult func revokeSessions(deviceID: String) async throws -> Int
    /// The account's devices that hold a session neither revoked nor expired at `date`.
    func signedInDevices(accountID: String, at date: Date) async throws -> Set<String>

    /// Everything a request's credentials name, read together (one round trip on the hot path):
    /// the session, the API token, and the token's app with its entitlements.
    func credentials(sessionDigest: String?, apiTokenDigest: String?) async throws -> StoredCredentials
}

/// Teams, apps, containers, entitlements and API tokens.
package protocol DeveloperStore: Sendable {
    func createTeam(_ team: Team) async throws
    func teams() async throws -> [Team]
    /// Makes an account a developer of a team: they see and change the team's containers in the dashboard.
    /// `StoreError.missing` when the team or the account does not exist; adding a member twice is harmless.
    func addTeamMember(teamID: String, accountID: String) async throws
    func removeTeamMember(teamID: String, accountID: String) async throws
    /// The teams an account is a developer of.
    func teamIDs(memberAccountID: String) async throws -> [String]
    /// The accounts that are developers of a team.
    func teamMembers(teamID: String) async throws -> [String]
    func createApp(_ app: App) async throws
    func app(bundleID: String) async throws -> App?
    func apps() async throws -> [App]
    func createContainer(_ container: Container) async throws
    func container(identifier: String) async throws -> Container?
    /// Sets which folder extensions the container treats as file packages; false when there is no such container.
    func setPackageExtensions(_ extensions: [String], of identifier: String) async throws -> Bool
    func containers() async throws -> [Container]
    func entitle(bundleID: String, container: String) async throws
    func revokeEntitlement(bundleID: String, container: String) async throws

    func createAPIToken(_ token: APITokenRecord) async throws
    func apiTokens() async throws -> [APITokenRecord]
    func revokeAPIToken(id: String) async throws

    func createServerKey(_ key: ServerKeyRecord) async throws
    func serverKey(id: String) async throws -> ServerKeyRecord?
    func serverKeys() async throws -> [ServerKeyRecord]
    func revokeServerKey(id: String) async throws
}

/// The substrate every service writes through: zones with a strictly increasing change sequence.
package protocol ZoneStore: Sendable {
    /// The zone's state, or nil when nothing was ever written to it.
    func zoneState(_ zone: ZoneKey) async throws -> ZoneState?
    /// What `extract` finds in every live payload containing `marker` in every zone of a kind of service
    /// (all accounts), read as of one moment: what the blob collector keeps.
    func scanLivePayloads<T: Sendable>(
        of kind: ZoneAddress.Service.Kind, containing marker: Data, _ extract: @escaping @Sendable (Data) throws -> [T]
    ) async throws -> [T]

    /// Runs `body` as one atomic transaction on the zone and returns its result with the zone's state after it.
    ///
    /// Every `put` gets the next sequence number, in order, in the same transaction as the write; removals
    /// leave tombstones. Throwing from `body` changes nothing. When the zone does not exist it is created
    /// if `creating`, and otherwise the call throws `StoreError.missing`.
    ///
    /// `body` is a pure function of what it reads through the transaction: a backend may run it more than
    /// once and keep only the last run's writes and result (PostgreSQL does, answering reads it has not
    /// fetched yet as "nothing stored", then fetching them and running the body again; see
    /// `docs/storage.md`). So a body reads only through the transaction, computes the same writes from the
    /// same reads, and has no other effect: anything it must tell the world it returns, and the caller acts
    /// on it once the transaction has committed.
    ///
    /// `keys` are entries the body is known to read: a backend that fetches reads (PostgreSQL) reads them
    /// with the zone's lock, in the same round trip. The body may read any other entry as well.
    func transact<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, reading keys: [String],
        _ body: @escaping @Sendable (any ZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState)

    /// Creates an empty zone; `StoreError.duplicate` when it exists.
    func createZone(_ zone: ZoneKey) async throws -> ZoneState
    /// Deletes a zone: at once, it no longer exists and its deletion is in the service's zone changes;
    /// its entries and index rows are purged afterwards by `purgeDeletedZones`. `StoreError.missing` when
    /// it does not exist.
    func deleteZone(_ zone: ZoneKey) async throws
    /// Purges the entries and index rows of deleted zones, in short transactions that other writes
    /// interleave with, until none is left or the task is cancelled; how many rows it deleted.
    @discardableResult func purgeDeletedZones() async throws -> Int
    /// The zones an account has in one service, by name.
    func zones(accountID: String, service: ZoneAddress.Service) async throws -> [ZoneSummary]
    /// Every zone of a kind of service, in all accounts (for jobs that tend them all).
    func zoneKeys(of kind: ZoneAddress.Service.Kind) async throws -> [ZoneKey]
    /// Bytes and zones per account and container (nil: the key-value store), largest first, at most `limit`.
    func storageUsage(limit: Int) async throws -> [StorageUsage]
    /// Zones of an account's service created, changed or deleted after `sequence` (a per-service counter).
    func zoneChanges(accountID: String, service: ZoneAddress.Service, after sequence: Int64, limit: Int) async throws
        -> ZoneChangePage

    /// The live entries of a zone and the sequence they are current at.
    func liveEntries(_ zone: ZoneKey) async throws -> (entries: [Entry], state: ZoneState?)
    /// The named entries that exist (live or tombstoned), in no particular order.
    func entries(_ zone: ZoneKey, keys: [String]) async throws -> [Entry]
    /// Live entries matching an index query, in its order.
    func query(_ query: IndexQuery) async throws -> [QueryMatch]

    /// Entries changed after `sequence`, oldest first, at most `limit`; one row per key (latest state).
    func changes(_ zone: ZoneKey, after sequence: Int64, limit: Int) async throws -> ChangePage

    /// The zone's grants to other accounts.
    func grants(_ zone: ZoneKey) async throws -> [ZoneGrant]
    /// Zones of a service other accounts granted `grantee` access to, accepted or not.
    func grantedZones(grantee: String, service: ZoneAddress.Service) async throws -> [GrantedZone]
    /// Marks a grant accepted; `StoreError.missing` when the zone grants the account nothing in that scope.
    func acceptGrant(_ zone: ZoneKey, scope: String, grantee: String) async throws

    /// Records, in one transaction, that devices have applied zones up to the given sequences (a
    /// watermark never moves backwards; marks of zones that no longer exist are skipped).
    func recordWatermarks(_ marks: [DeviceWatermark]) async throws
    /// Each zone a device has acknowledged, with its watermark and the zone's current sequence.
    func watermarks(deviceID: String) async throws -> [(zone: ZoneAddress, applied: Int64, current: Int64)]
}

extension ZoneStore {
    /// `transact` with no entries known to be read ahead.
    package func transact<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, _ body: @escaping @Sendable (any ZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState) {
        try await transact(zone, creating: creating, reading: [], body)
    }

    /// Applies a batch of mutations atomically, creating the zone on first write. `check` sees the zone's
    /// totals as they would be after the batch and may throw to refuse it, in which case nothing changes.
    package func commit(
        _ zone: ZoneKey, mutations: [EntryMutation], check: @escaping @Sendable (ZoneState) throws -> Void
    ) async throws -> ZoneState {
        try await transact(zone, creating: true, reading: mutations.map(\.key)) { transaction in
            for mutation in mutations {
                try transaction.put(mutation.key, payload: mutation.payload, size: mutation.size)
            }
            try check(transaction.state)
        }.state
    }
}

/// The work of one zone transaction: reads and writes of entries and of their secondary index.
package protocol ZoneTransaction: AnyObject {
    /// The zone's state including this transaction's writes so far.
    var state: ZoneState { get }
    /// The entry under `key`, live or tombstoned, as this transaction sees it.
    func entry(_ key: String) throws -> Entry?
    /// Writes a payload (nil: a tombstone) and its audience under the zone's next sequence number, which
    /// it returns.
    @discardableResult func put(_ key: String, payload: Data?, size: Int, audience: String?) throws -> Int64
    /// Indexes the entry's current (live) version as `kind` with these rows, once per `put`: each `put`
    /// drops the index rows of the version it replaces. The store adds a row under `IndexEntry.keyField`.
    func index(_ key: String, kind: String, rows: [IndexEntry]) throws
    /// Bytes the zone's owner holds in all their zones, of every service, this transaction's writes
    /// included: what their storage quota counts.
    func ownerBytes() throws -> Int
    /// Replaces the zone's grants of one scope; grants kept for the same grantee keep their acceptance.
    func setGrants(_ grants: [ZoneGrant], scope: String) throws
    /// Keys of the zone's live entries of `kind` that have a row `field == value`.
    func keys(kind: String, field: String, value: IndexValue) throws -> [String]
}

/// A transaction on a record database's zone: a zone transaction that also reads and grows the
/// container environment's schema, which changes if and only if the zone's writes commit.
package protocol RecordZoneTransaction: ZoneTransaction {
    /// A container environment's schema as this transaction sees it.
    func schemaText(container: String, environment: String) throws -> String?
    /// Replaces a container environment's schema, which then changes if and only if the zone's writes commit.
    func setSchemaText(_ text: String, container: String, environment: String) throws
    /// Adds a version to a record's history: `note` (the server's words for it, opaque to the store) under
    /// the sequence the key's last `put` wrote. A key keeps its newest `RecordVersionNote.kept` notes:
    /// older ones go, unless `first` says there are none (a record created, or created again after its
    /// deletion forgot its history), which spares a batch of new records a trim each. A `first` that is
    /// wrong only postpones the trim to the record's next version.
    func noteVersion(_ key: String, note: Data, first: Bool) throws
    /// Forgets a record's history, as its record is deleted.
    func forgetHistory(_ key: String) throws
}

/// One version in a record's history: the sequence it was written at (its change tag) and what the server
/// noted of it (who, from which device, what changed). Notes hold no field values: a value a user
/// removed from a record must not live on in its history.
package struct RecordVersionNote: Sendable, Hashable {
    package var sequence: Int64
    package var note: Data

    /// How many versions a record's history keeps: enough to see who changed what lately, bounded so that
    /// a record saved every second costs the same rows as one saved once a day.
    package static let kept = 50

    package init(sequence: Int64, note: Data) {
        self.sequence = sequence
        self.note = note
    }
}

extension ZoneTransaction {
    /// Writes a payload (nil: a tombstone) without an audience.
    @discardableResult package func put(_ key: String, payload: Data?, size: Int) throws -> Int64 {
        try put(key, payload: payload, size: size, audience: nil)
    }
}

/// What record databases keep beyond the substrate: schemas per (container, environment), kept as text
/// in CloudKit's schema language, which grow inside the zone transactions that save records, and the
/// records' payloads read across databases.
package protocol RecordDatabaseStore: ZoneStore {
    /// `transact` on a record database's zone, with the schema in the transaction.
    func transactRecords<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, _ body: @escaping @Sendable (any RecordZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState)
    func schemaText(container: String, environment: String) async throws -> String?
    /// Replaces the schema with what `update` makes of the current one, atomically (concurrent updates
    /// each see the other's result), then gives the entries already stored the index rows the new schema
    /// asks for (`update`'s backfills) and returns the stored text once they have them. The backfills are
    /// recorded with the schema and run in short transactions that other writes interleave with (a query
    /// meanwhile may miss records not yet reached); one cut off by a stop is resumed by `runBackfill`.
    func updateSchemaText(
        container: String, environment: String,
        _ update: @escaping @Sendable (String?) throws -> (text: String, backfills: [IndexBackfill])
    ) async throws -> String
    /// The history of a record (a key of a record zone), newest first; empty for a record deleted since or
    /// saved only before histories were kept.
    func recordHistory(_ zone: ZoneKey, key: String) async throws -> [RecordVersionNote]
    /// Backfills recorded and not finished (cut off by a stop).
    func pendingBackfills() async throws -> [PendingBackfill]
    /// Runs a recorded backfill from where it stopped to its end, `rows` making each entry's rows;
    /// `CancellationError` when cancelled between two steps (it stays recorded).
    func runBackfill(_ id: Int64, rows: @escaping @Sendable (_ payload: Data) throws -> [IndexEntry]) async throws
}

/// A backfill recorded and not finished (under way, or cut off by a stop).
package struct PendingBackfill: Sendable, Hashable {
    package var id: Int64
    package var container: String
    package var environment: String
    package var kind: String
    /// How far it has come, 0 to 1, estimated from its cursor without counting entries: the live entries of
    /// the zones it has passed, and of the zone it is in the share of that zone's changes it has passed.
    package var progress: Double

    package init(id: Int64, container: String, environment: String, kind: String, progress: Double = 0) {
        self.id = id
        self.container = container
        self.environment = environment
        self.kind = kind
        self.progress = progress
    }
}

/// Index rows a schema change adds to records already stored: to every live entry of `kind` in the record
/// databases of one container environment, the rows `rows` makes of its payload (called inside the
/// schema's write transaction, which holds the writer until every entry is done). Rows an entry already
/// has stay as they are.
package struct IndexBackfill: Sendable {
    package var container: String
    package var environment: String
    package var kind: String
    package var rows: @Sendable (_ payload: Data) throws -> [IndexEntry]

    package init(
        container: String, environment: String, kind: String, rows: @escaping @Sendable (_ payload: Data) throws -> [IndexEntry]
    ) {
        self.container = container
        self.environment = environment
        self.kind = kind
        self.rows = rows
    }
}

/// Asset uploads and their receipts.
package protocol AssetStore: Sendable {
    func createAssetUpload(_ upload: AssetUploadRecord) async throws
    func assetUpload(id: String) async throws -> AssetUploadRecord?
    /// Records the uploaded blob and the receipt's digest; `StoreError.duplicate` if already completed.
    func completeAssetUpload(id: String, blob: StoredBlob, receiptDigest: String) async throws
    func assetUpload(receiptDigest: String) async throws -> AssetUploadRecord?
    /// Blobs of completed uploads whose URL expires after `date`: receipts that may still be redeemed.
    func uploadedBlobIDs(expiringAfter date: Date) async throws -> Set<String>
    /// Forgets uploads whose URL expired before `date`; their receipts can no longer be redeemed.
    func deleteAssetUploads(expiredBefore date: Date) async throws
}

/// Who holds a container's custom security roles, per environment (the built-in roles need no members).
package protocol RoleStore: Sendable {
    /// Every membership of the container's environment.
    func roleMembers(container: String, environment: String) async throws -> [RoleMember]
    /// Adds an account to a role (`member`) or removes it; adding a member or removing a non-member again
    /// changes nothing.
    func setRoleMember(_ membership: RoleMember, container: String, environment: String, member: Bool) async throws
}

/// Jobs every node runs now and then that one run at a time does (collecting blobs, expiring documents):
/// whichever node claims the run does it.
package protocol PeriodicJobStore: Sendable {
    /// Whether the caller is to run `job` now: true when no run of it started in the `interval` before `now`
    /// (`now` is recorded as this run's start), false otherwise. Of callers sharing the store, one a turn
    /// gets true; a run whose node died is not waited for, the next claim after `interval` runs it again.
    func claimPeriodicRun(_ job: String, every interval: TimeInterval, now: Date) async throws -> Bool
}

/// Everything Nimbus keeps besides blobs. A backend is done when it passes the conformance suite.
package typealias Store = AccountStore & DeveloperStore & RecordDatabaseStore & AssetStore & RoleStore
    & PeriodicJobStore

/// Short messages between the nodes that share a backend: wake-ups, never data (a node that misses one
/// loses only a hint; what changed is read from the store). Delivered to every node listening, the
/// sender's included, once the sending transaction (if any) has committed; not kept for a node that was
/// not listening.
package protocol NodeSignals: Sendable {
    /// The most bytes of UTF-8 one signal may hold.
    var maximumSignalBytes: Int { get }
    /// Sends signals to every listening node, in order.
    func signal(_ texts: [String]) async throws
    /// Calls `receive` with every signal sent from now until the task is cancelled, listening again after
    /// a lost connection (`listening` is called each time listening starts: signals sent before it may
    /// have been missed).
    func listen(listening: @escaping @Sendable () -> Void, _ receive: @escaping @Sendable (String) -> Void) async
}
