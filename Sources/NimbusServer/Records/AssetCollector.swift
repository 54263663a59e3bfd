import Foundation
import Logging
import NimbusCore
import NimbusStore
import ServiceLifecycle

/// Deletes asset files that no record holds and no receipt can still bring into one (files of deleted
/// records, of replaced asset values, and uploads never saved into a record), and document chunks that
/// no version holds (current, conflict or in history): versions purged, uploads never saved.
///
/// It marks and sweeps rather than counting references, because a receipt may be redeemed into more
/// than one record while it is valid. Files written within `grace` stay whatever the scan saw, so a
/// batch that redeemed a file and committed after the scan's snapshot keeps it.
struct AssetCollector: Sendable {
    let server: ServerState

    static let grace: TimeInterval = 60 * 60

    /// Runs one collection; returns how many files it deleted.
    func collect() async throws -> Int {
        let now = server.configuration.now()
        // A receipt can be redeemed until `receiptLifetime` after its upload URL expired.
        let redeemable = now.addingTimeInterval(-RecordService.receiptLifetime - Self.grace)
        try await server.store.deleteAssetUploads(expiredBefore: redeemable)
        var live = try await server.store.uploadedBlobIDs(expiringAfter: redeemable)
        live.formUnion(
            try await server.store.scanLivePayloads(of: .records, containing: StoredRecord.assetMarker) {
                try StoredRecord(payload: $0).assetIDs
            })
        live.formUnion(
            try await server.store.scanLivePayloads(of: .documents, containing: ChunkReferences.marker) {
                try JSONDecoder().decode(ChunkReferences.self, from: $0).hashes
            })
        return try await server.blobs.sweep(keeping: live, writtenBefore: now.addingTimeInterval(-Self.grace))
    }
}

/// The chunks a document payload names: an item's current and conflict versions, or a version kept
/// in history.
struct ChunkReferences: Decodable {
    /// Bytes every payload naming a chunk contains.
    static let marker = Data("\"chunks\"".utf8)

    var current: DocumentVersion?
    var conflicts: [DocumentVersion]?
    var content: DocumentContent?

    var hashes: [String] {
        let contents = ([current].compactMap { $0 } + (conflicts ?? [])).map(\.content) + [content].compactMap { $0 }
        return contents.flatMap { $0.chunks.map(\.hash) }
    }
}

/// Removes expired document versions and items (`DocumentExpiry`), then runs the asset collector, every
/// `interval` while the server runs; and has the long jobs resume what a stopped node left unfinished.
///
/// Nodes sharing a database take turns: each looks twice an interval, and runs the job when its claim
/// (`PeriodicJobStore`) says no node started it within the interval. So it runs once every one to one and a
/// half intervals, on one node at a time, and goes on while any node does.
struct AssetCollection: Service {
    let collector: AssetCollector
    let interval: Duration
    let logger: Logger

    static let job = "collect-blobs"

    func run() async throws {
        let server = collector.server
        await periodically(every: interval / 2) {
            do {
                let now = server.configuration.now()
                guard try await server.store.claimPeriodicRun(Self.job, every: interval.seconds, now: now) else { return }
                server.jobs.resumeUnfinished()
                let expired = try await DocumentExpiry(server: collector.server).expire()
                if expired > 0 { logger.info("removed expired document versions and items", metadata: ["count": "\(expired)"]) }
                let deleted = try await collector.collect()
                if deleted > 0 { logger.info("deleted asset files no record holds", metadata: ["files": "\(deleted)"]) }
            } catch {
                logger.error("asset collection failed; it runs again later", metadata: ["error": "\(error)"])
            }
        }
    }
}
