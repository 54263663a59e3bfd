import Foundation
import Logging
import NimbusStore
import ServiceLifecycle
import Synchronization

/// Long jobs that run beside requests, in short transactions of their own: purging deleted zones'
/// entries, and index backfills a stop cut off. They run when the server starts, when a zone is deleted
/// here, and when the periodic jobs come round (`AssetCollection`), so what a node that stopped or died
/// left unfinished is finished by another.
final class BackgroundJobs: Sendable {
    private let store: any Store
    private let schemas: SchemaRegistry
    private let logger: Logger
    /// Work waiting since the jobs last looked; buffering one signal makes deletions during a purge one more
    /// round, not one each.
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    /// Whether the next wake-up looks for unfinished backfills too (not after a mere deletion: the backfills
    /// this node runs are then still running, not unfinished).
    private let backfillsMayWait = Atomic(true)

    init(store: any Store, schemas: SchemaRegistry, logger: Logger) {
        self.store = store
        self.schemas = schemas
        self.logger = logger
        (wakeUps, wake) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        // Work cut off before a stop may be waiting.
        wake.yield()
    }

    /// Has the zones deleted so far purged soon.
    func zoneDeleted() {
        wake.yield()
    }

    /// Has unfinished backfills and purges, whichever node began them, resumed soon.
    func resumeUnfinished() {
        backfillsMayWait.store(true, ordering: .sequentiallyConsistent)
        wake.yield()
    }

    /// Resumes unfinished backfills (when some may wait), then purges deleted zones, at each wake-up until
    /// cancelled (between two steps, each its own transaction; what is left resumes at the next wake-up).
    func run() async {
        for await _ in wakeUps {
            do {
                if backfillsMayWait.exchange(false, ordering: .sequentiallyConsistent) { try await resumeBackfills() }
            } catch {
                logger.error("resuming index backfills failed; they resume later", metadata: ["error": "\(error)"])
            }
            do {
                let purged = try await store.purgeDeletedZones()
                if purged > 0 { logger.info("purged deleted zones", metadata: ["rows": "\(purged)"]) }
            } catch {
                logger.error("purging deleted zones failed; it runs again later", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Finishes the backfills not finished yet, by each container environment's schema as it is now.
    private func resumeBackfills() async throws {
        for pending in try await store.pendingBackfills() {
            guard let environment = RecordDatabase.Environment(rawValue: pending.environment) else { continue }
            let schema = try await schemas.schema(container: pending.container, environment: environment)
            logger.notice(
                "resuming an index backfill", metadata: ["container": "\(pending.container)", "type": "\(pending.kind)"])
            try await store.runBackfill(pending.id, rows: RecordIndexer.backfillRows(of: pending.kind, in: schema))
        }
    }
}

/// Runs the long jobs beside the server.
struct BackgroundJobsService: Service {
    let jobs: BackgroundJobs

    func run() async throws {
        await cancelWhenGracefulShutdown { await jobs.run() }
    }
}
