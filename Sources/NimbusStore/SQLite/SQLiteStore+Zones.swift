import Foundation
import GRDB
import NimbusCore

extension SQLiteStore: ZoneStore {
    public func zoneState(_ zone: ZoneKey) async throws -> ZoneState? {
        try await read { db in try Self.state(of: zone, db) }
    }

    public func commit(
        _ zone: ZoneKey, mutations: [EntryMutation], check: @escaping @Sendable (ZoneState) throws -> Void
    ) async throws -> ZoneState {
        try await groupCommit.commit { db in
            var state = try Self.state(of: zone, db) ?? Self.createZone(zone, db)
            for mutation in mutations {
                let previous = try Row.fetchOne(
                    try db.cachedStatement(
                        sql: "SELECT payload IS NOT NULL AS live, size FROM entries WHERE zone_id = ? AND key = ?"),
                    arguments: [state.id, mutation.key])
                if let previous, previous["live"] as Bool {
                    state.liveEntries -= 1
                    state.liveBytes -= previous["size"] as Int
                }
                if mutation.payload != nil {
                    state.liveEntries += 1
                    state.liveBytes += mutation.size
                }
                state.sequence += 1
                try db.cachedStatement(
                    sql: """
                        INSERT INTO entries (zone_id, key, payload, size, sequence) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (zone_id, key) DO UPDATE
                        SET payload = excluded.payload, size = excluded.size, sequence = excluded.sequence
                        """
                ).execute(arguments: [
                    state.id, mutation.key, mutation.payload, mutation.payload == nil ? 0 : mutation.size, state.sequence,
                ])
            }
            try check(state)
            try db.cachedStatement(sql: "UPDATE zones SET sequence = ?, live_entries = ?, live_bytes = ? WHERE id = ?").execute(
                arguments: [state.sequence, state.liveEntries, state.liveBytes, state.id])
            return state
        }
    }

    public func liveEntries(_ zone: ZoneKey) async throws -> (entries: [Entry], state: ZoneState?) {
        try await read { db in
            guard let state = try Self.state(of: zone, db) else { return ([], nil) }
            let entries = try Row.fetchAll(
                try db.cachedStatement(
                    sql: "SELECT key, payload, sequence FROM entries WHERE zone_id = ? AND payload IS NOT NULL ORDER BY key"),
                arguments: [state.id]
            ).map(Self.entry)
            return (entries, state)
        }
    }

    public func changes(_ zone: ZoneKey, after sequence: Int64, limit: Int) async throws -> ChangePage {
        try await read { db in
            guard let state = try Self.state(of: zone, db) else {
                return ChangePage(entries: [], token: ChangeToken(zoneID: 0, sequence: 0), moreComing: false)
            }
            let rows = try Row.fetchAll(
                try db.cachedStatement(
                    sql: "SELECT key, payload, sequence FROM entries WHERE zone_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
                ),
                arguments: [state.id, sequence, limit + 1])
            let entries = rows.prefix(limit).map(Self.entry)
            let moreComing = rows.count > limit
            let resume = moreComing ? entries.last!.sequence : state.sequence
            return ChangePage(entries: entries, token: ChangeToken(zoneID: state.id, sequence: resume), moreComing: moreComing)
        }
    }

    public func recordWatermark(deviceID: String, zone: ZoneKey, sequence: Int64) async throws {
        try await write { db in
            guard let state = try Self.state(of: zone, db) else { throw StoreError.missing("zone \(zone.address)") }
            try db.cachedStatement(
                sql: """
                    INSERT INTO device_watermarks (device_id, zone_id, sequence) VALUES (?, ?, ?)
                    ON CONFLICT (device_id, zone_id) DO UPDATE SET sequence = max(sequence, excluded.sequence)
                    """
            ).execute(arguments: [deviceID, state.id, max(0, min(sequence, state.sequence))])
        }
    }

    public func watermarks(deviceID: String) async throws -> [(zone: ZoneAddress, applied: Int64, current: Int64)] {
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
                (ZoneAddress(service: .init(rawValue: row["service"]), name: row["name"]), row["applied"], row["current"])
            }
        }
    }

    private static func state(of zone: ZoneKey, _ db: Database) throws -> ZoneState? {
        try Row.fetchOne(
            try db.cachedStatement(
                sql: "SELECT id, sequence, live_entries, live_bytes FROM zones WHERE account_id = ? AND service = ? AND name = ?"),
            arguments: [zone.accountID, zone.address.service.rawValue, zone.address.name]
        ).map { ZoneState(id: $0["id"], sequence: $0["sequence"], liveEntries: $0["live_entries"], liveBytes: $0["live_bytes"]) }
    }

    private static func createZone(_ zone: ZoneKey, _ db: Database) throws -> ZoneState {
        try db.cachedStatement(sql: "INSERT INTO zones (account_id, service, name) VALUES (?, ?, ?)").execute(arguments: [
            zone.accountID, zone.address.service.rawValue, zone.address.name,
        ])
        return ZoneState(id: db.lastInsertedRowID, sequence: 0, liveEntries: 0, liveBytes: 0)
    }

    private static func entry(_ row: Row) -> Entry {
        Entry(key: row["key"], payload: row["payload"], sequence: row["sequence"])
    }
}
