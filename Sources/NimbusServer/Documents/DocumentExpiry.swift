import Foundation
import NimbusCore
import NimbusStore

/// Removes what documents keep only for a while: versions that left their item (replaced, or conflicts
/// resolved) and items in Recently Deleted, once `documentRetention` (30 days) has passed, and chunk
/// holdings that hold nothing any more. The collector then deletes the chunks nothing holds.
struct DocumentExpiry: Sendable {
    let server: ServerState

    /// Runs once over every container's documents; how many versions and items it removed.
    func expire() async throws -> Int {
        let cutoff = (server.configuration.now() - TimeInterval(server.configuration.documentRetention.components.seconds))
            .milliseconds
        var removed = 0
        let decoder = JSONDecoder()
        for zone in try await server.store.zoneKeys(of: .documents) {
            let trash = try await server.store.query(
                IndexQuery(
                    zones: [zone], kind: DocumentKeys.itemKind,
                    conditions: [IndexCondition(field: "trash", .equal(.text("1")))], limit: DocumentNames.maxEntries))
            let history = try await server.store.query(
                IndexQuery(zones: [zone], kind: DocumentKeys.versionKind, limit: DocumentNames.maxEntries))
            let expiredItems = try trash.compactMap { match -> String? in
                guard let payload = match.entry.payload else { return nil }
                let item = try decoder.decode(DocumentItem.self, from: payload)
                return (item.deletedAt ?? .max) < cutoff ? item.itemID : nil
            }
            let expiredVersions = try history.compactMap { match -> String? in
                guard let payload = match.entry.payload else { return nil }
                let version = try decoder.decode(DocumentVersion.self, from: payload)
                return (version.replacedAt ?? version.savedAt) < cutoff ? match.entry.key : nil
            }
            guard !expiredItems.isEmpty || !expiredVersions.isEmpty else { continue }
            let now = server.configuration.now().milliseconds
            let (count, state) = try await server.store.transact(zone, creating: false) { transaction in
                let writer = DocumentWriter(transaction: transaction, device: "", now: now)
                var count = 0
                // Read again inside the transaction: an item restored meanwhile stays.
                for id in expiredItems where try writer.item(id)?.deletedAt.map({ $0 < cutoff }) == true {
                    try writer.remove(id)
                    count += 1
                }
                for key in expiredVersions where try transaction.entry(key)?.payload != nil {
                    try transaction.put(key, payload: nil, size: 0)
                    count += 1
                }
                return count
            }
            removed += count
            server.push.publish(to: zone.accountID, PushMessage(type: .zoneMoved, zone: zone.address, sequence: state.sequence))
        }
        for zone in try await server.store.zoneKeys(of: .documents) { removed += try await releaseChunks(zone) }
        return removed
    }

    /// Removes the zone's chunk holdings that no longer hold anything: uploads no version named within a
    /// day (their bytes stop counting against the quota), and chunks no item or version names any more.
    /// The collector then deletes the files nobody holds.
    private func releaseChunks(_ zone: ZoneKey) async throws -> Int {
        guard let sequence = try await server.store.zoneState(zone)?.sequence else { return 0 }
        let abandoned = (server.configuration.now() - Self.uploadLifetime).milliseconds
        let decoder = JSONDecoder()
        let all = { (kind: String) in
            try await server.store.query(IndexQuery(zones: [zone], kind: kind, limit: DocumentNames.maxEntries))
        }
        var named = Set<String>()
        for match in try await all(DocumentKeys.itemKind) + all(DocumentKeys.versionKind) {
            guard let payload = match.entry.payload else { continue }
            named.formUnion(try decoder.decode(ChunkReferences.self, from: payload).hashes)
        }
        let released = try await all(DocumentKeys.chunkKind).compactMap { match -> String? in
            guard let payload = match.entry.payload else { return nil }
            let held = try decoder.decode(ChunkHolding.self, from: payload)
            let hash = String(match.entry.key.dropFirst(2))
            return (held.named ? !named.contains(hash) : held.uploadedAt < abandoned) ? match.entry.key : nil
        }
        guard !released.isEmpty else { return 0 }
        return try await server.store.transact(zone, creating: false) { transaction in
            // A write since the reads above may name one of them: leave the zone for the next run.
            guard transaction.state.sequence == sequence else { return 0 }
            for key in released { try transaction.put(key, payload: nil, size: 0) }
            return released.count
        }.result
    }

    /// How long an uploaded chunk waits for a version to name it.
    static let uploadLifetime: TimeInterval = 24 * 3600
}
