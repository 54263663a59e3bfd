import Foundation
import NIOCore
import NimbusCore
import NimbusStore
import PostgresNIO

extension PostgresStore: ZoneStore {
    package func zoneState(_ zone: ZoneKey) async throws -> ZoneState? {
        try await rows(
            "SELECT \(unescaped: Self.zoneStateColumns) FROM zones WHERE account_id = \(zone.accountID) AND service = \(zone.address.service.encoded) AND name = \(zone.address.name)"
        ).first.map(Self.zoneState)
    }

    package func transact<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, reading keys: [String],
        _ body: @escaping @Sendable (any ZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState) {
        try await transactPostgres(zone, creating: creating, reading: keys, body)
    }

    /// How many times a body may run before the transaction gives up: each run but the last fetched
    /// something the one before it missed, and no writer reads in chains this long.
    static let maxRuns = 32

    /// The one zone transaction of every service, run as `PostgresZoneTransaction` describes.
    ///
    /// The zone's row is locked (`FOR UPDATE`) before anything is read and until the commit: the zone's
    /// writers take turns, and each takes its sequence numbers from the row it holds, so a zone's changes
    /// become visible in the order of their sequences and a reader that has seen sequence n has seen
    /// every change before it. A sequence handed out by a transaction that then rolls back is handed out
    /// again, so a reader never waits for a number that will not come.
    ///
    /// The entries under `keys` are read with the zone's lock, in one statement, so a body that reads only
    /// those runs once.
    func transactPostgres<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, reading keys: [String],
        _ body: @escaping @Sendable (PostgresZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState) {
        try await transaction { connection in
            var (found, stored) = try await Self.lockedState(of: zone, reading: keys, connection)
            // A zone created here counts in the service's zone changes when the transaction writes (the
            // service's counter is locked last, after any schema: see `write`).
            var created = false
            if found == nil, creating {
                (found, created) = try await Self.createZone(zone, connection)
            }
            guard let before = found else { throw StoreError.missing("zone \(zone.address.name)") }
            var fetched = PostgresZoneTransaction.Fetched()
            // Read with the lock, or a zone this transaction made (empty); another's new zone is read lazily.
            if stored != nil || created {
                for key in keys { fetched.entries[key] = .some(stored?[key]) }
            }
            for _ in 1...Self.maxRuns {
                let run = PostgresZoneTransaction(before: before, fetched: fetched)
                let outcome = Result { try body(run) }
                guard run.missed.isEmpty else {
                    try await Self.fetch(run.missed, into: &fetched, zone: zone, state: before, connection)
                    continue
                }
                let result = try outcome.get()
                // A schema read without a lock may have changed since: write only over the text the run read.
                guard try await Self.schemasUnchanged(run, &fetched, connection) else { continue }
                try await Self.write(run, zone, created: created, connection)
                return (result, run.state)
            }
            throw StoreError.missing("a transaction whose reads did not settle after \(Self.maxRuns) runs")
        }
    }

    /// Fetches what a run missed.
    private static func fetch(
        _ missed: PostgresZoneTransaction.Missed, into fetched: inout PostgresZoneTransaction.Fetched, zone: ZoneKey,
        state: ZoneState, _ connection: PostgresConnection
    ) async throws {
        if !missed.entries.isEmpty {
            let keys = Array(missed.entries)
            for key in keys { fetched.entries[key] = .some(nil) }
            let rows = try await connection.run(
                "SELECT key, payload, sequence, audience, size FROM entries WHERE zone_id = \(state.id) AND key = ANY(\(keys))")
            for row in rows {
                let (key, payload, sequence, audience, size) = try row.decode((String, Data?, Int64, String?, Int64).self)
                fetched.entries[key] = PostgresZoneTransaction.StoredVersion(
                    entry: Entry(key: key, payload: payload, sequence: sequence, audience: audience), size: Int(size))
            }
        }
        if missed.othersBytes {
            fetched.othersBytes = Int(
                try await connection.run(
                    "SELECT coalesce(sum(live_bytes), 0)::bigint FROM zones WHERE account_id = \(zone.accountID) AND id != \(state.id)"
                ).value(Int64.self) ?? 0)
        }
        for scope in missed.grantScopes {
            fetched.acceptedGrantees[scope] = Set(
                try await connection.run(
                    "SELECT grantee FROM zone_grants WHERE zone_id = \(state.id) AND scope = \(scope) AND accepted"
                ).values(String.self))
        }
        for lookup in missed.keyLookups {
            let value = IndexColumns(lookup.value)
            fetched.keyLookups[lookup] = try await connection.run(
                """
                SELECT DISTINCT e.key FROM entry_index i JOIN entries e ON e.zone_id = i.zone_id AND e.sequence = i.sequence
                WHERE i.zone_id = \(state.id) AND i.field = \(IndexFieldID.of(kind: lookup.kind, field: lookup.field))
                AND \(unescaped: value.isText ? "i.text = " : "i.number = ")\(value.value)\(unescaped: value.isText ? "" : "::numeric")
                """
            ).values(String.self)
        }
        for key in missed.schemas {
            fetched.schemas[key] = .some(
                try await schemaText(container: key.container, environment: key.environment, locking: false, connection))
        }
    }

    /// Whether the schemas the run changes are still the ones it read, locking them until the commit;
    /// when one changed, what it now is goes into `fetched` for the next run.
    private static func schemasUnchanged(
        _ run: PostgresZoneTransaction, _ fetched: inout PostgresZoneTransaction.Fetched, _ connection: PostgresConnection
    ) async throws -> Bool {
        var unchanged = true
        for key in run.schemaWrites.keys {
            let current = try await schemaText(
                container: key.container, environment: key.environment, locking: true, connection)
            if fetched.schemas[key] != .some(current) {
                fetched.schemas[key] = .some(current)
                unchanged = false
            }
        }
        return unchanged
    }

    /// A container environment's schema; `locking` holds it until the commit, whether or not it exists yet.
    static func schemaText(container: String, environment: String, locking: Bool, _ connection: PostgresConnection)
        async throws -> String?
    {
        if locking {
            try await connection.run(
                "SELECT pg_advisory_xact_lock(hashtextextended(\("schema:\(container):\(environment)"), 0))")
        }
        return try await connection.run(
            "SELECT text FROM schemas WHERE container = \(container) AND environment = \(environment)"
        ).value(String.self)
    }

    static func setSchemaText(_ text: String, container: String, environment: String, _ connection: PostgresConnection)
        async throws
    {
        try await connection.run(
            """
            INSERT INTO schemas (container, environment, text) VALUES (\(container), \(environment), \(text))
            ON CONFLICT (container, environment) DO UPDATE SET text = excluded.text
            """)
    }

    /// Writes what a run that missed nothing wrote, and the zone's new state.
    ///
    /// Locks are taken in one order in every transaction, so two never wait for each other: the zone's row
    /// (first, in `transactPostgres`), the schema (`schemasUnchanged`), then the service's counter, here.
    private static func write(
        _ run: PostgresZoneTransaction, _ zone: ZoneKey, created: Bool, _ connection: PostgresConnection
    ) async throws {
        let zoneID = run.before.id
        if !run.replacedSequences.isEmpty {
            try await connection.run(ZoneStatements.DropIndexRows(zoneID: zoneID, sequences: run.replacedSequences))
        }
        if !run.writeOrder.isEmpty {
            try await connection.run(
                ZoneStatements.PutEntries(zoneID: zoneID, versions: run.writeOrder.map { run.written[$0]! }))
        }
        let indexed = run.indexed.sorted { $0.key < $1.key }.flatMap { sequence, versions in
            versions.map { (sequence, $0) }
        }
        if !indexed.isEmpty {
            try await IndexRows(zoneID: zoneID, indexed).insert(connection, ignoringExisting: false)
        }
        if !run.forgottenHistories.isEmpty {
            try await connection.run(
                "DELETE FROM record_history WHERE zone_id = \(zoneID) AND key = ANY(\(run.forgottenHistories.sorted()))")
        }
        if !run.notes.isEmpty {
            try await connection.run(ZoneStatements.NoteVersions(zoneID: zoneID, notes: run.notes))
        }
        if !run.trimmedHistories.isEmpty {
            try await connection.run(ZoneStatements.TrimHistories(zoneID: zoneID, keys: run.trimmedHistories.sorted()))
        }
        for (scope, grants) in run.grantWrites.sorted(by: { $0.key < $1.key }) {
            try await connection.run(
                "DELETE FROM zone_grants WHERE zone_id = \(zoneID) AND scope = \(scope)")
            for grant in grants {
                try await connection.run(
                    """
                    INSERT INTO zone_grants (zone_id, scope, grantee, permission, accepted)
                    VALUES (\(zoneID), \(scope), \(grant.grantee), \(grant.permission.rawValue), \(grant.accepted))
                    """)
            }
        }
        for (key, text) in run.schemaWrites {
            try await setSchemaText(text, container: key.container, environment: key.environment, connection)
        }
        if run.state != run.before || created {
            try await recordChange(zone, zoneID: zoneID, state: run.state, connection)
        }
    }

    package func createZone(_ zone: ZoneKey) async throws -> ZoneState {
        try await transaction { connection in
            guard try await Self.lockedState(of: zone, connection) == nil else {
                throw StoreError.duplicate("zone \(zone.address.name)")
            }
            let (state, created) = try await Self.createZone(zone, connection)
            guard let state, created else { throw StoreError.duplicate("zone \(zone.address.name)") }
            try await Self.recordChange(zone, zoneID: state.id, state: nil, connection)
            return state
        }
    }

    package func deleteZone(_ zone: ZoneKey) async throws {
        try await transaction { connection in
            guard let state = try await Self.lockedState(of: zone, connection) else {
                throw StoreError.missing("zone \(zone.address.name)")
            }
            // As in SQLite: the zone's few rows go now, its entries and index rows later; until then its row
            // belongs to no account and no service, so its name is free. Zone ids are never reused.
            try await connection.run("DELETE FROM device_watermarks WHERE zone_id = \(state.id)")
            try await connection.run("DELETE FROM zone_grants WHERE zone_id = \(state.id)")
            try await connection.run(
                """
                UPDATE zones SET account_id = '', service = \(Self.purging), kind = \(Self.purging), container = NULL,
                    environment = NULL, name = id::text
                WHERE id = \(state.id)
                """)
            try await connection.run("INSERT INTO zone_purges (zone_id) VALUES (\(state.id))")
            let changedAt = try await Self.advanceServiceSequence(zone, connection)
            try await connection.run(
                """
                INSERT INTO zone_tombstones (account_id, service, name, changed_at)
                VALUES (\(zone.accountID), \(zone.address.service.encoded), \(zone.address.name), \(changedAt))
                ON CONFLICT (account_id, service, name) DO UPDATE SET changed_at = excluded.changed_at
                """)
        }
    }

    /// What a deleted zone's row belongs to until its entries are purged: no service.
    static let purging = "purging"

    package func purgeDeletedZones() async throws -> Int {
        var purged = 0
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let start = clock.now
            guard let deleted = try await transaction({ connection in try await Self.purgeStep(connection) }) else { break }
            purged += deleted
            try? await Task.sleep(for: clock.now - start)
        }
        return purged
    }

    /// Deletes a batch of index rows, or else of records' histories, or else of entries, of the first zone
    /// awaiting its purge, and the zone once nothing of it is left; how many rows it deleted, or nil when no zone awaits. Other nodes
    /// purging at the same time take other zones (`SKIP LOCKED`).
    private static func purgeStep(_ connection: PostgresConnection) async throws -> Int? {
        guard
            let zone = try await connection.run(
                "SELECT zone_id FROM zone_purges ORDER BY zone_id LIMIT 1 FOR UPDATE SKIP LOCKED"
            ).value(Int64.self)
        else { return nil }
        let indexRows = try await connection.run(
            """
            WITH doomed AS (SELECT DISTINCT sequence FROM entry_index WHERE zone_id = \(zone) ORDER BY sequence LIMIT 256)
            DELETE FROM entry_index WHERE zone_id = \(zone) AND sequence IN (SELECT sequence FROM doomed) RETURNING 1
            """
        ).count
        if indexRows > 0 { return indexRows }
        let histories = try await connection.run(
            """
            DELETE FROM record_history WHERE zone_id = \(zone) AND key IN
                (SELECT DISTINCT key FROM record_history WHERE zone_id = \(zone) ORDER BY key LIMIT 64)
            RETURNING 1
            """
        ).count
        if histories > 0 { return histories }
        let entries = try await connection.run(
            """
            DELETE FROM entries WHERE zone_id = \(zone) AND key IN (SELECT key FROM entries WHERE zone_id = \(zone) LIMIT 1024)
            RETURNING 1
            """
        ).count
        if entries > 0 { return entries }
        try await connection.run("DELETE FROM zone_purges WHERE zone_id = \(zone)")
        try await connection.run("DELETE FROM zones WHERE id = \(zone) AND service = \(Self.purging)")
        return 0
    }

    package func zones(accountID: String, service: ZoneAddress.Service) async throws -> [ZoneSummary] {
        try await rows(
            "SELECT name, \(unescaped: Self.zoneStateColumns) FROM zones WHERE account_id = \(accountID) AND service = \(service.encoded) ORDER BY name"
        ).map { row in
            ZoneSummary(name: try row.column(0), state: try Self.zoneState(row, from: 1))
        }
    }

    package func storageUsage(limit: Int) async throws -> [StorageUsage] {
        // A deleted zone keeps its row, with no account, until it is purged.
        try await rows(
            """
            SELECT account_id, container, sum(live_bytes)::bigint, count(*) FROM zones WHERE account_id <> ''
            GROUP BY account_id, container ORDER BY sum(live_bytes) DESC, account_id, container LIMIT \(limit)
            """
        ).map { row in
            let (accountID, container, bytes, zones) = try row.decode((String, String?, Int64, Int64).self)
            return StorageUsage(accountID: accountID, container: container, bytes: Int(bytes), zones: Int(zones))
        }
    }

    package func zoneKeys(of kind: ZoneAddress.Service.Kind) async throws -> [ZoneKey] {
        try await rows("SELECT account_id, service, name FROM zones WHERE kind = \(kind.rawValue) ORDER BY id").compactMap {
            row in
            let (accountID, service, name) = try row.decode((String, String, String).self)
            guard let service = ZoneAddress.Service(encoded: service) else { return nil }
            return ZoneKey(accountID: accountID, address: ZoneAddress(service: service, name: name))
        }
    }

    package func zoneChanges(accountID: String, service: ZoneAddress.Service, after sequence: Int64, limit: Int) async throws
        -> ZoneChangePage
    {
        try await transaction { connection in
            let row = try await connection.run(
                """
                SELECT sequence, epoch, previous_epoch, restored_sequence FROM service_sequences
                WHERE account_id = \(accountID) AND service = \(service.encoded)
                """
            ).first
            let counter = try row.map { try $0.decode((Int64, Int64, Int64?, Int64?).self) }
            let current = counter?.0 ?? 0
            let history =
                if let counter {
                    SequenceHistory(epoch: counter.1, previousEpoch: counter.2, restoredSequence: counter.3)
                } else {
                    SequenceHistory(epoch: try await Self.currentEpoch(connection), previousEpoch: nil, restoredSequence: nil)
                }
            let rows = try await connection.run(
                """
                SELECT name, changed_at, false AS deleted FROM zones
                    WHERE account_id = \(accountID) AND service = \(service.encoded) AND changed_at > \(sequence)
                UNION ALL
                SELECT name, changed_at, true AS deleted FROM zone_tombstones
                    WHERE account_id = \(accountID) AND service = \(service.encoded) AND changed_at > \(sequence)
                ORDER BY changed_at LIMIT \(Int64(limit + 1))
                """
            ).map { try $0.decode((String, Int64, Bool).self) }
            let page = rows.prefix(limit)
            let moreComing = rows.count > limit
            return ZoneChangePage(
                changes: page.map { ZoneChangePage.Change(name: $0.0, deleted: $0.2) },
                sequence: moreComing ? page.last!.1 : current, moreComing: moreComing, current: current, history: history)
        }
    }

    package func scanLivePayloads<T: Sendable>(
        of kind: ZoneAddress.Service.Kind, containing marker: Data, _ extract: @escaping @Sendable (Data) throws -> [T]
    ) async throws -> [T] {
        // One statement reads as of one moment; its rows arrive as they are read rather than all at once.
        do {
            return try await leased { connection in
                let rows = try await connection.query(
                    """
                    SELECT e.payload FROM entries e JOIN zones z ON z.id = e.zone_id
                    WHERE z.kind = \(kind.rawValue) AND e.payload IS NOT NULL AND position(\(ByteBuffer(bytes: marker))::bytea IN e.payload) > 0
                    """, logger: Self.logger)
                var found = [T]()
                for try await payload in rows.decode(Data.self) { found += try extract(payload) }
                return found
            }
        } catch {
            throw Self.storeError(error)
        }
    }

    package func entries(_ zone: ZoneKey, keys: [String]) async throws -> [Entry] {
        guard !keys.isEmpty else { return [] }
        return try await rows(
            """
            SELECT e.key, e.payload, e.sequence, e.audience FROM entries e JOIN zones z ON z.id = e.zone_id
            WHERE z.account_id = \(zone.accountID) AND z.service = \(zone.address.service.encoded) AND z.name = \(zone.address.name)
            AND e.key = ANY(\(keys))
            """
        ).map(Self.entry)
    }

    package func liveEntries(_ zone: ZoneKey) async throws -> (entries: [Entry], state: ZoneState?) {
        try await transaction { connection in
            guard let state = try await Self.state(of: zone, connection) else { return ([], nil) }
            let entries = try await connection.run(
                "SELECT key, payload, sequence, audience FROM entries WHERE zone_id = \(state.id) AND payload IS NOT NULL ORDER BY key"
            ).map(Self.entry)
            return (entries, state)
        }
    }

    package func changes(_ zone: ZoneKey, after sequence: Int64, limit: Int) async throws -> ChangePage {
        // One statement: the zone's state and the page are read as of the same moment, so the token never
        // passes a change the page did not hold.
        let rows = try await rows(
            """
            SELECT \(unescaped: Self.zoneStateColumnsOfZ),
                e.key, e.payload, e.sequence, e.audience
            FROM zones z LEFT JOIN LATERAL (
                SELECT key, payload, sequence, audience FROM entries
                WHERE zone_id = z.id AND sequence > \(sequence) ORDER BY sequence LIMIT \(Int64(limit + 1))
            ) e ON true
            WHERE z.account_id = \(zone.accountID) AND z.service = \(zone.address.service.encoded) AND z.name = \(zone.address.name)
            ORDER BY e.sequence
            """)
        guard let first = rows.first else {
            return ChangePage(entries: [], token: ChangeToken(zoneID: 0, sequence: 0), moreComing: false)
        }
        let state = try Self.zoneState(first)
        let entries = try rows.compactMap { row -> Entry? in
            guard let key = try row.column(7, as: String?.self), let sequence = try row.column(9, as: Int64?.self) else {
                return nil
            }
            return Entry(key: key, payload: try row.column(8), sequence: sequence, audience: try row.column(10))
        }
        let page = Array(entries.prefix(limit))
        let moreComing = entries.count > limit
        return ChangePage(
            entries: page,
            token: ChangeToken(
                zoneID: state.id, sequence: moreComing ? page.last!.sequence : state.sequence, epoch: state.history.epoch),
            moreComing: moreComing)
    }

    package func grants(_ zone: ZoneKey) async throws -> [ZoneGrant] {
        try await rows(
            """
            SELECT g.scope, g.grantee, g.permission, g.accepted FROM zone_grants g JOIN zones z ON z.id = g.zone_id
            WHERE z.account_id = \(zone.accountID) AND z.service = \(zone.address.service.encoded) AND z.name = \(zone.address.name)
            ORDER BY g.scope, g.grantee
            """
        ).map { try Self.grant($0) }
    }

    package func grantedZones(grantee: String, service: ZoneAddress.Service) async throws -> [GrantedZone] {
        try await rows(
            """
            SELECT g.scope, g.grantee, g.permission, g.accepted, z.account_id, z.name, \(unescaped: Self.zoneStateColumnsOfZ)
            FROM zone_grants g JOIN zones z ON z.id = g.zone_id WHERE g.grantee = \(grantee) AND z.service = \(service.encoded)
            ORDER BY z.account_id, z.name, g.scope
            """
        ).map { row in
            let (owner, name): (String, String) = (try row.column(4), try row.column(5))
            return GrantedZone(owner: owner, name: name, grant: try Self.grant(row), state: try Self.zoneState(row, from: 6))
        }
    }

    package func acceptGrant(_ zone: ZoneKey, scope: String, grantee: String) async throws {
        try await transaction { connection in
            guard let state = try await Self.state(of: zone, connection) else {
                throw StoreError.missing("zone \(zone.address.name)")
            }
            let updated = try await connection.run(
                """
                UPDATE zone_grants SET accepted = true WHERE zone_id = \(state.id) AND scope = \(scope) AND grantee = \(grantee)
                RETURNING 1
                """
            ).count
            guard updated == 1 else { throw StoreError.missing("share of zone \(zone.address.name)") }
        }
    }

    package func recordWatermarks(_ marks: [DeviceWatermark]) async throws {
        guard !marks.isEmpty else { return }
        try await transaction { connection in
            for mark in marks {
                guard let state = try await Self.state(of: mark.zone, connection) else { continue }
                let sequence = max(0, min(mark.sequence, state.sequence))
                try await connection.run(
                    """
                    INSERT INTO device_watermarks (device_id, zone_id, sequence) VALUES (\(mark.deviceID), \(state.id), \(sequence))
                    ON CONFLICT (device_id, zone_id) DO UPDATE SET sequence = greatest(device_watermarks.sequence, excluded.sequence)
                    """)
            }
        }
    }

    package func watermarks(deviceID: String) async throws -> [(zone: ZoneAddress, applied: Int64, current: Int64)] {
        try await rows(
            """
            SELECT z.service, z.name, w.sequence, z.sequence FROM device_watermarks w JOIN zones z ON z.id = w.zone_id
            WHERE w.device_id = \(deviceID) ORDER BY z.service, z.name
            """
        ).map { row in
            let (service, name, applied, current) = try row.decode((String, String, Int64, Int64).self)
            guard let service = ZoneAddress.Service(encoded: service) else { throw StoreError.missing("service \(service)") }
            return (ZoneAddress(service: service, name: name), applied, current)
        }
    }

    // MARK: Rows

    static let zoneStateColumns = "id, sequence, live_entries, live_bytes, epoch, previous_epoch, restored_sequence"
    /// `zoneStateColumns` of the table aliased `z`.
    static let zoneStateColumnsOfZ = zoneStateColumns.split(separator: ", ").map { "z.\($0)" }.joined(separator: ", ")

    static func zoneState(_ row: PostgresRow) throws -> ZoneState { try zoneState(row, from: 0) }

    static func zoneState(_ row: PostgresRow, from first: Int) throws -> ZoneState {
        let row = row.makeRandomAccess()
        return ZoneState(
            id: try row[first].decode(Int64.self), sequence: try row[first + 1].decode(Int64.self),
            liveEntries: Int(try row[first + 2].decode(Int64.self)), liveBytes: Int(try row[first + 3].decode(Int64.self)),
            history: SequenceHistory(
                epoch: try row[first + 4].decode(Int64.self), previousEpoch: try row[first + 5].decode(Int64?.self),
                restoredSequence: try row[first + 6].decode(Int64?.self)))
    }

    static func entry(_ row: PostgresRow) throws -> Entry {
        let (key, payload, sequence, audience) = try row.decode((String, Data?, Int64, String?).self)
        return Entry(key: key, payload: payload, sequence: sequence, audience: audience)
    }

    private static func grant(_ row: PostgresRow) throws -> ZoneGrant {
        let row = row.makeRandomAccess()
        let (scope, grantee, permission, accepted) = (
            try row[0].decode(String.self), try row[1].decode(String.self), try row[2].decode(String.self),
            try row[3].decode(Bool.self)
        )
        return ZoneGrant(
            scope: scope, grantee: grantee, permission: ZoneGrant.Permission(rawValue: permission) ?? .read, accepted: accepted)
    }

    private static func state(of zone: ZoneKey, _ connection: PostgresConnection) async throws -> ZoneState? {
        try await connection.run(
            "SELECT \(unescaped: zoneStateColumns) FROM zones WHERE account_id = \(zone.accountID) AND service = \(zone.address.service.encoded) AND name = \(zone.address.name)"
        ).first.map(zoneState)
    }

    /// The zone's state, its row locked until the transaction ends.
    private static func lockedState(of zone: ZoneKey, _ connection: PostgresConnection) async throws -> ZoneState? {
        try await lockedState(of: zone, reading: [], connection).state
    }

    /// The zone's state, its row locked until the transaction ends, and its entries under `keys` (those
    /// stored; nil when the zone does not exist).
    private static func lockedState(of zone: ZoneKey, reading keys: [String], _ connection: PostgresConnection)
        async throws -> (state: ZoneState?, stored: [String: PostgresZoneTransaction.StoredVersion]?)
    {
        let rows = try await connection.run(ZoneStatements.LockZone(zone: zone, keys: keys))
        guard let first = rows.first else { return (nil, nil) }
        var stored = [String: PostgresZoneTransaction.StoredVersion]()
        for row in rows {
            let columns = row.makeRandomAccess()
            guard let key = try columns[7].decode(String?.self) else { continue }
            stored[key] = PostgresZoneTransaction.StoredVersion(
                entry: Entry(
                    key: key, payload: try columns[8].decode(Data?.self), sequence: try columns[9].decode(Int64.self),
                    audience: try columns[10].decode(String?.self)),
                size: Int(try columns[11].decode(Int64.self)))
        }
        return (try zoneState(first), stored)
    }

    /// The epoch of the last restore (0 before any): what zones and service sequences begun now start in.
    static func currentEpoch(_ connection: PostgresConnection) async throws -> Int64 {
        try await connection.run("SELECT epoch FROM restores ORDER BY id DESC LIMIT 1").value(
            Int64.self) ?? 0
    }

    /// Creates the zone with its row locked, or (when another transaction created it first) waits for that
    /// one and locks the zone it made. The caller advances the service's counter for a zone it created.
    private static func createZone(_ zone: ZoneKey, _ connection: PostgresConnection) async throws
        -> (state: ZoneState?, created: Bool)
    {
        let service = zone.address.service
        let epoch = try await currentEpoch(connection)
        let created = try await connection.run(
            """
            INSERT INTO zones (account_id, service, name, kind, container, environment, epoch)
            VALUES (\(zone.accountID), \(service.encoded), \(zone.address.name), \(service.kind.rawValue), \(service.container),
                \(service.environment), \(epoch))
            ON CONFLICT (account_id, service, name) DO NOTHING
            RETURNING \(unescaped: zoneStateColumns)
            """
        ).first.map(zoneState)
        guard let created else { return (try await lockedState(of: zone, connection), false) }
        try await connection.run(
            """
            DELETE FROM zone_tombstones
            WHERE account_id = \(zone.accountID) AND service = \(zone.address.service.encoded) AND name = \(zone.address.name)
            """)
        return (created, true)
    }

    /// Takes the next number of the account's per-service counter (locking it until the commit, so the
    /// service's changes also become visible in order); a counter begun now starts in the current epoch.
    private static func advanceServiceSequence(_ zone: ZoneKey, _ connection: PostgresConnection) async throws -> Int64 {
        try await connection.run(
            PostgresQuery(unsafeSQL: advancing + " SELECT sequence FROM advanced", binds: advancingBinds(zone))
        ).value(Int64.self)!
    }

    /// Advances the service's counter and stamps the zone's row with it, and with `state` when given: one
    /// statement (a write's round trips are most of its cost on PostgreSQL).
    private static func recordChange(_ zone: ZoneKey, zoneID: Int64, state: ZoneState?, _ connection: PostgresConnection)
        async throws
    {
        if let state {
            try await connection.run(ZoneStatements.RecordChange(zone: zone, zoneID: zoneID, state: state))
            return
        }
        var binds = advancingBinds(zone)
        binds.append(zoneID)
        try await connection.run(
            PostgresQuery(
                unsafeSQL: advancing + " UPDATE zones SET changed_at = advanced.sequence FROM advanced WHERE id = $3",
                binds: binds))
    }

    /// The common table `advanced`: the account's per-service counter moved on (locked until the commit, so
    /// the service's changes also become visible in order; a counter begun now starts in the current epoch).
    /// $1 is the account, $2 the service.
    static let advancing = """
        WITH advanced AS (
            INSERT INTO service_sequences (account_id, service, sequence, epoch)
            VALUES ($1, $2, 1, coalesce((SELECT epoch FROM restores ORDER BY id DESC LIMIT 1), 0))
            ON CONFLICT (account_id, service) DO UPDATE SET sequence = service_sequences.sequence + 1
            RETURNING sequence)
        """

    private static func advancingBinds(_ zone: ZoneKey) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(zone.accountID)
        binds.append(zone.address.service.encoded)
        return binds
    }
}

/// The columns an index value is stored in: numbers exact as `numeric` (bound as text), text as text,
/// points as their latitude and a longitude.
struct IndexColumns {
    var isText: Bool
    var value: String
    var longitude: Double?

    init(_ value: IndexValue) {
        switch value {
        case .integer(let integer): self = IndexColumns(isText: false, value: String(integer), longitude: nil)
        case .real(let real): self = IndexColumns(isText: false, value: Self.numeric(real), longitude: nil)
        case .text(let text): self = IndexColumns(isText: true, value: Self.text(text), longitude: nil)
        case .point(let latitude, let longitude):
            self = IndexColumns(isText: false, value: Self.numeric(latitude), longitude: longitude)
        }
    }

    private init(isText: Bool, value: String, longitude: Double?) {
        self.isText = isText
        self.value = value
        self.longitude = longitude
    }

    /// Text as SQLite stores and compares it (bound up to its first NUL, which PostgreSQL's text cannot
    /// hold at all): the two backends index and find the same values.
    static func text(_ text: String) -> String {
        guard let nul = text.utf8.firstIndex(of: 0) else { return text }
        return String(text[..<nul])
    }

    /// A double as PostgreSQL's `numeric` reads it: the shortest decimal that is that double, so distinct
    /// doubles stay distinct and in order.
    static func numeric(_ real: Double) -> String {
        if real.isNaN { return "NaN" }
        if real.isInfinite { return real < 0 ? "-Infinity" : "Infinity" }
        return "\(real)"
    }
}

/// Index rows written together in one statement.
struct IndexRows {
    var zoneID: Int64
    var sequences: [Int64] = []
    var fields: [Int64] = []
    var positions: [Int32] = []
    var isText: [Bool] = []
    var values: [String] = []
    var longitudes: [Double] = []
    var hasLongitude: [Bool] = []
    /// (id, kind, field) of every field the rows name, to register.
    var names: [Int64: (kind: String, field: String)] = [:]

    init(zoneID: Int64, _ versions: [(Int64, PostgresZoneTransaction.IndexedVersion)]) {
        self.zoneID = zoneID
        for (sequence, version) in versions { append(sequence, kind: version.kind, version.rows) }
    }

    init(zoneID: Int64) { self.zoneID = zoneID }

    mutating func append(_ sequence: Int64, kind: String, _ rows: [IndexEntry]) {
        for row in rows {
            let id = IndexFieldID.of(kind: kind, field: row.field)
            names[id] = (kind, row.field)
            let columns = IndexColumns(row.value)
            sequences.append(sequence)
            fields.append(id)
            positions.append(Int32(clamping: row.position))
            isText.append(columns.isText)
            values.append(columns.value)
            longitudes.append(columns.longitude ?? 0)
            hasLongitude.append(columns.longitude != nil)
        }
    }

    var isEmpty: Bool { sequences.isEmpty }

    /// Registers the rows' field names and inserts the rows; `ignoringExisting` skips rows a version has
    /// already (a backfill's).
    ///
    /// - Throws: `StoreError.duplicate` when a field's id already names another field.
    func insert(_ connection: PostgresConnection, ignoringExisting: Bool) async throws {
        let ids = names.keys.sorted()
        try await connection.run(
            """
            INSERT INTO index_fields (id, kind, field)
            SELECT * FROM unnest(\(ids)::bigint[], \(ids.map { names[$0]!.kind })::text[], \(ids.map { names[$0]!.field })::text[])
            ON CONFLICT (id) DO NOTHING
            """)
        let registered = try await connection.run(
            "SELECT id, kind, field FROM index_fields WHERE id = ANY(\(ids))")
        for row in registered {
            let (id, kind, field) = try row.decode((Int64, String, String).self)
            guard names[id]! == (kind, field) else {
                throw StoreError.duplicate("index field id \(id) of \(names[id]!.kind).\(names[id]!.field)")
            }
        }
        try await connection.run(
            """
            INSERT INTO entry_index (zone_id, sequence, field, position, number, text, longitude)
            SELECT \(zoneID), q, f, p, CASE WHEN t THEN NULL ELSE v::numeric END, CASE WHEN t THEN v END,
                CASE WHEN hl THEN l END
            FROM unnest(\(sequences)::bigint[], \(fields)::bigint[], \(positions)::int[], \(isText)::bool[], \(values)::text[],
                \(longitudes)::float8[], \(hasLongitude)::bool[]) AS u(q, f, p, t, v, l, hl)
            \(unescaped: ignoringExisting ? "ON CONFLICT DO NOTHING" : "")
            """)
    }
}
