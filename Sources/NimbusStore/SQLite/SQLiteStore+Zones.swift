import Foundation
import GRDB
import NimbusCore

extension SQLiteStore: ZoneStore {
    package func zoneState(_ zone: ZoneKey) async throws -> ZoneState? {
        try await read { db in try Self.state(of: zone, db) }
    }

    /// SQLite reads inside its transaction, as the body asks: entries known ahead need no fetching.
    package func transact<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, reading keys: [String],
        _ body: @escaping @Sendable (any ZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState) {
        try await transactSQLite(zone, creating: creating, body)
    }

    /// The one zone transaction of every service: a record database's sees the schema too.
    func transactSQLite<T: Sendable>(
        _ zone: ZoneKey, creating: Bool, _ body: @escaping @Sendable (SQLiteZoneTransaction) throws -> T
    ) async throws -> (result: T, state: ZoneState) {
        try await groupCommit.commit { db in
            guard let before = try Self.state(of: zone, db) ?? (creating ? Self.createZone(zone, db) : nil) else {
                throw StoreError.missing("zone \(zone.address.name)")
            }
            let transaction = SQLiteZoneTransaction(db, state: before)
            let result = try body(transaction)
            let after = transaction.state
            if after != before {
                try db.cachedStatement(
                    sql: "UPDATE zones SET sequence = ?, live_entries = ?, live_bytes = ?, changed_at = ? WHERE id = ?"
                ).execute(arguments: [
                    after.sequence, after.liveEntries, after.liveBytes, try Self.advanceServiceSequence(zone, db), after.id,
                ])
            }
            return (result, after)
        }
    }

    package func createZone(_ zone: ZoneKey) async throws -> ZoneState {
        try await groupCommit.commit { db in
            guard try Self.state(of: zone, db) == nil else { throw StoreError.duplicate("zone \(zone.address.name)") }
            return try Self.createZone(zone, db)
        }
    }

    package func deleteZone(_ zone: ZoneKey) async throws {
        try await groupCommit.commit { db in
            guard let state = try Self.state(of: zone, db) else { throw StoreError.missing("zone \(zone.address.name)") }
            // The zone's few rows go now; its entries and index rows, which may be millions, are purged later.
            // Until then its row stays (the entries' foreign key needs it) but belongs to no account and no
            // service, so nothing finds it and its name is free; zone ids are never reused.
            for table in ["device_watermarks", "zone_grants"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE zone_id = ?", arguments: [state.id])
            }
            try db.execute(
                sql: """
                    UPDATE zones SET account_id = '', service = ?2, kind = ?2, container = NULL, environment = NULL, name = CAST(id AS TEXT)
                    WHERE id = ?1
                    """,
                arguments: [state.id, Self.purging])
            try db.execute(sql: "INSERT INTO zone_purges (zone_id) VALUES (?)", arguments: [state.id])
            try db.execute(
                sql: "INSERT INTO zone_tombstones (account_id, service, name, changed_at) VALUES (?, ?, ?, ?)",
                arguments: [
                    zone.accountID, zone.address.service.encoded, zone.address.name, try Self.advanceServiceSequence(zone, db),
                ])
        }
    }

    /// Purges at most half the time: after each step it rests as long as the step took. A purge step
    /// rewrites hundreds of scattered index pages, whose sync and checkpoint the disk serves before a
    /// request's commit; nobody waits for a purge (the zone is gone already), so requests come first.
    package func purgeDeletedZones() async throws -> Int {
        var purged = 0
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let start = clock.now
            guard let deleted = try await groupCommit.commit(.background, { db in try Self.purgeStep(db) }) else { break }
            purged += deleted
            try? await Task.sleep(for: clock.now - start)
        }
        return purged
    }

    /// What a deleted zone's row belongs to until its entries are purged: no service.
    static let purging = "purging"

    /// Deletes index rows, then record histories, then entries, of the first zone awaiting its purge, for `stepBudget`; how many
    /// rows it deleted, or nil when no zone awaits.
    private static func purgeStep(_ db: Database) throws -> Int? {
        guard let zone = try Int64.fetchOne(db, sql: "SELECT zone_id FROM zone_purges ORDER BY zone_id LIMIT 1") else {
            return nil
        }
        let deleteIndexRows = try db.cachedStatement(
            sql: """
                DELETE FROM entry_index WHERE zone_id = ?1 AND sequence IN
                    (SELECT DISTINCT sequence FROM entry_index WHERE zone_id = ?1 ORDER BY sequence LIMIT 64)
                """)
        let deleteHistory = try db.cachedStatement(
            sql: """
                DELETE FROM record_history WHERE zone_id = ?1 AND key IN
                    (SELECT DISTINCT key FROM record_history WHERE zone_id = ?1 ORDER BY key LIMIT 16)
                """)
        let deleteEntries = try db.cachedStatement(
            sql: "DELETE FROM entries WHERE zone_id = ?1 AND key IN (SELECT key FROM entries WHERE zone_id = ?1 LIMIT 256)")
        var deleted = 0
        let deadline = ContinuousClock.now + stepBudget
        while ContinuousClock.now < deadline {
            var changes = 0
            for statement in [deleteIndexRows, deleteHistory, deleteEntries] where changes == 0 {
                try statement.execute(arguments: [zone])
                changes = db.changesCount
            }
            guard changes > 0 else {
                try db.execute(sql: "DELETE FROM zone_purges WHERE zone_id = ?", arguments: [zone])
                try db.execute(sql: "DELETE FROM zones WHERE id = ? AND service = ?", arguments: [zone, Self.purging])
                break
            }
            deleted += changes
        }
        return deleted
    }

    package func zones(accountID: String, service: ZoneAddress.Service) async throws -> [ZoneSummary] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT name, \(Self.zoneStateColumns) FROM zones WHERE account_id = ? AND service = ? ORDER BY name",
                arguments: [accountID, service.encoded]
            ).map { ZoneSummary(name: $0["name"], state: Self.zoneState($0)) }
        }
    }

    package func storageUsage(limit: Int) async throws -> [StorageUsage] {
        try await read { db in
            // A deleted zone keeps its row, with no account, until it is purged.
            try Row.fetchAll(
                db,
                sql: """
                    SELECT account_id, container, SUM(live_bytes) AS bytes, COUNT(*) AS zones FROM zones WHERE account_id <> ''
                    GROUP BY account_id, container ORDER BY bytes DESC, account_id, container LIMIT ?
                    """, arguments: [limit]
            ).map { row in
                StorageUsage(accountID: row["account_id"], container: row["container"], bytes: row["bytes"], zones: row["zones"])
            }
        }
    }

    package func zoneKeys(of kind: ZoneAddress.Service.Kind) async throws -> [ZoneKey] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT account_id, service, name FROM zones WHERE kind = ? ORDER BY id", arguments: [kind.rawValue]
            ).compactMap { row in
                guard let accountID = row["account_id"] as String?, let service = ZoneAddress.Service(encoded: row["service"])
                else { return nil }
                return ZoneKey(accountID: accountID, address: ZoneAddress(service: service, name: row["name"]))
            }
        }
    }

    package func zoneChanges(accountID: String, service: ZoneAddress.Service, after sequence: Int64, limit: Int) async throws
        -> ZoneChangePage
    {
        try await read { db in
            let row = try Row.fetchOne(
                db,
                sql:
                    "SELECT sequence, epoch, previous_epoch, restored_sequence FROM service_sequences WHERE account_id = ? AND service = ?",
                arguments: [accountID, service.encoded])
            let current: Int64 = row?["sequence"] ?? 0
            let history =
                try row.map(Self.history)
                ?? SequenceHistory(epoch: Self.currentEpoch(db), previousEpoch: nil, restoredSequence: nil)
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT name, changed_at, 0 AS deleted FROM zones WHERE account_id = ? AND service = ? AND changed_at > ?
                    UNION ALL
                    SELECT name, changed_at, 1 AS deleted FROM zone_tombstones WHERE account_id = ? AND service = ? AND changed_at > ?
                    ORDER BY changed_at LIMIT ?
                    """,
                arguments: [accountID, service.encoded, sequence, accountID, service.encoded, sequence, limit + 1])
            let page = rows.prefix(limit)
            let moreComing = rows.count > limit
            return ZoneChangePage(
                changes: page.map { ZoneChangePage.Change(name: $0["name"], deleted: $0["deleted"]) },
                sequence: moreComing ? page.last!["changed_at"] : current, moreComing: moreComing, current: current,
                history: history)
        }
    }

    package func scanLivePayloads<T: Sendable>(
        of kind: ZoneAddress.Service.Kind, containing marker: Data, _ extract: @escaping @Sendable (Data) throws -> [T]
    ) async throws -> [T] {
        try await read { db in
            let payloads = try Data.fetchCursor(
                db,
                sql: """
                    SELECT e.payload FROM entries e JOIN zones z ON z.id = e.zone_id
                    WHERE z.kind = ? AND e.payload IS NOT NULL AND instr(e.payload, ?) > 0
                    """,
                arguments: [kind.rawValue, marker])
            var found = [T]()
            while let payload = try payloads.next() { found += try extract(payload) }
            return found
        }
    }

    package func entries(_ zone: ZoneKey, keys: [String]) async throws -> [Entry] {
        guard !keys.isEmpty else { return [] }
        return try await read { db in
            guard let state = try Self.state(of: zone, db) else { return [] }
            let statement = try db.cachedStatement(
                sql: "SELECT key, payload, sequence, audience FROM entries WHERE zone_id = ? AND key = ?")
            return try keys.compactMap { key in try Row.fetchOne(statement, arguments: [state.id, key]).map(Self.entry) }
        }
    }

    package func liveEntries(_ zone: ZoneKey) async throws -> (entries: [Entry], state: ZoneState?) {
        try await read { db in
            guard let state = try Self.state(of: zone, db) else { return ([], nil) }
            let entries = try Row.fetchAll(
                try db.cachedStatement(
                    sql:
                        "SELECT key, payload, sequence, audience FROM entries WHERE zone_id = ? AND payload IS NOT NULL ORDER BY key"
                ),
                arguments: [state.id]
            ).map(Self.entry)
            return (entries, state)
        }
    }

    package func changes(_ zone: ZoneKey, after sequence: Int64, limit: Int) async throws -> ChangePage {
        try await read { db in
            guard let state = try Self.state(of: zone, db) else {
                return ChangePage(entries: [], token: ChangeToken(zoneID: 0, sequence: 0), moreComing: false)
            }
            let rows = try Row.fetchAll(
                try db.cachedStatement(
                    sql:
                        "SELECT key, payload, sequence, audience FROM entries WHERE zone_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
                ),
                arguments: [state.id, sequence, limit + 1])
            let entries = rows.prefix(limit).map(Self.entry)
            let moreComing = rows.count > limit
            let resume = moreComing ? entries.last!.sequence : state.sequence
            return ChangePage(
                entries: entries, token: ChangeToken(zoneID: state.id, sequence: resume, epoch: state.history.epoch),
                moreComing: moreComing)
        }
    }

    package func grants(_ zone: ZoneKey) async throws -> [ZoneGrant] {
        try await read { db in
            guard let state = try Self.state(of: zone, db) else { return [] }
            return try Row.fetchAll(
                db, sql: "SELECT * FROM zone_grants WHERE zone_id = ? ORDER BY scope, grantee", arguments: [state.id]
            ).map(Self.grant)
        }
    }

    package func grantedZones(grantee: String, service: ZoneAddress.Service) async throws -> [GrantedZone] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT g.*, z.account_id AS owner, z.name, z.id, z.sequence, z.live_entries, z.live_bytes, z.epoch, z.previous_epoch, z.restored_sequence
                    FROM zone_grants g JOIN zones z ON z.id = g.zone_id WHERE g.grantee = ? AND z.service = ? ORDER BY z.account_id, z.name, g.scope
                    """, arguments: [grantee, service.encoded]
            ).map { GrantedZone(owner: $0["owner"], name: $0["name"], grant: Self.grant($0), state: Self.zoneState($0)) }
        }
    }

    package func acceptGrant(_ zone: ZoneKey, scope: String, grantee: String) async throws {
        try await write { db in
            guard let state = try Self.state(of: zone, db) else { throw StoreError.missing("zone \(zone.address.name)") }
            try db.execute(
                sql: "UPDATE zone_grants SET accepted = 1 WHERE zone_id = ? AND scope = ? AND grantee = ?",
                arguments: [state.id, scope, grantee])
            guard db.changesCount == 1 else { throw StoreError.missing("share of zone \(zone.address.name)") }
        }
    }

    private static func grant(_ row: Row) -> ZoneGrant {
        ZoneGrant(
            scope: row["scope"], grantee: row["grantee"], permission: ZoneGrant.Permission(rawValue: row["permission"]) ?? .read,
            accepted: row["accepted"])
    }

    package func recordWatermarks(_ marks: [DeviceWatermark]) async throws {
        guard !marks.isEmpty else { return }
        try await write { db in
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO device_watermarks (device_id, zone_id, sequence) VALUES (?, ?, ?)
                    ON CONFLICT (device_id, zone_id) DO UPDATE SET sequence = max(sequence, excluded.sequence)
                    """)
            for mark in marks {
                guard let state = try Self.state(of: mark.zone, db) else { continue }
                try upsert.execute(arguments: [mark.deviceID, state.id, max(0, min(mark.sequence, state.sequence))])
            }
        }
    }

    package func watermarks(deviceID: String) async throws -> [(zone: ZoneAddress, applied: Int64, current: Int64)] {
        try await read { db in
            try Row.fetchAll(
                try db.cachedStatement(
                    sql: """
                        SELECT z.service, z.name, w.sequence AS applied, z.sequence AS current
                        FROM device_watermarks w JOIN zones z ON z.id = w.zone_id
                        WHERE w.device_id = ? ORDER BY z.service, z.name
                        """),
                arguments: [deviceID]
            ).map { row in
                (ZoneAddress(service: try Self.service(row["service"]), name: row["name"]), row["applied"], row["current"])
            }
        }
    }

    private static func state(of zone: ZoneKey, _ db: Database) throws -> ZoneState? {
        try Row.fetchOne(
            try db.cachedStatement(
                sql: "SELECT \(zoneStateColumns) FROM zones WHERE account_id = ? AND service = ? AND name = ?"),
            arguments: [zone.accountID, zone.address.service.encoded, zone.address.name]
        ).map(zoneState)
    }

    private static let zoneStateColumns = "id, sequence, live_entries, live_bytes, epoch, previous_epoch, restored_sequence"

    private static func zoneState(_ row: Row) -> ZoneState {
        ZoneState(
            id: row["id"], sequence: row["sequence"], liveEntries: row["live_entries"], liveBytes: row["live_bytes"],
            history: history(row))
    }

    static func history(_ row: Row) -> SequenceHistory {
        SequenceHistory(epoch: row["epoch"], previousEpoch: row["previous_epoch"], restoredSequence: row["restored_sequence"])
    }

    /// The epoch of the last restore (0 before any): what zones and service sequences begun now start in.
    static func currentEpoch(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(try db.cachedStatement(sql: "SELECT epoch FROM restores ORDER BY id DESC LIMIT 1")) ?? 0
    }

    private static func createZone(_ zone: ZoneKey, _ db: Database) throws -> ZoneState {
        let changedAt = try advanceServiceSequence(zone, db)
        let service = zone.address.service
        let epoch = try currentEpoch(db)
        try db.cachedStatement(
            sql: """
                INSERT INTO zones (account_id, service, name, changed_at, kind, container, environment, epoch)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                zone.accountID, service.encoded, zone.address.name, changedAt, service.kind.rawValue, service.container,
                service.environment, epoch,
            ])
        let id = db.lastInsertedRowID
        try db.cachedStatement(sql: "DELETE FROM zone_tombstones WHERE account_id = ? AND service = ? AND name = ?").execute(
            arguments: [zone.accountID, zone.address.service.encoded, zone.address.name])
        return ZoneState(
            id: id, sequence: 0, liveEntries: 0, liveBytes: 0,
            history: SequenceHistory(epoch: epoch, previousEpoch: nil, restoredSequence: nil))
    }

    /// Takes the next number of the account's per-service counter, which orders zone creations, changes
    /// and deletions for `zoneChanges`.
    private static func advanceServiceSequence(_ zone: ZoneKey, _ db: Database) throws -> Int64 {
        try Int64.fetchOne(
            try db.cachedStatement(
                sql: """
                    INSERT INTO service_sequences (account_id, service, sequence, epoch) VALUES (?, ?, 1, ?)
                    ON CONFLICT (account_id, service) DO UPDATE SET sequence = sequence + 1
                    RETURNING sequence
                    """),
            arguments: [zone.accountID, zone.address.service.encoded, try currentEpoch(db)])!
    }

    /// A service as stored; text no service writes is a damaged database.
    static func service(_ text: String) throws -> ZoneAddress.Service {
        guard let service = ZoneAddress.Service(encoded: text) else { throw StoreError.missing("service \(text)") }
        return service
    }

    static func entry(_ row: Row) -> Entry {
        Entry(key: row["key"], payload: row["payload"], sequence: row["sequence"], audience: row["audience"])
    }
}
