import Foundation
import Logging
import NimbusStore
import ServiceLifecycle

/// Long jobs that run beside requests, in short transactions of their own: purging deleted zones'
/// entries, and index backfills a stop cut off (resumed when the server starts).
final class BackgroundJobs: Sendable {
    private let store: any Store
    private let schemas: SchemaRegistry
    private let logger: Logger
    /// Zones deleted since the purge last looked; buffering one signal makes deletions during a purge
    /// one more round, not one each.
    private let deletions: AsyncStream<Void>
    private let deleted: AsyncStream<Void>.Continuation

    init(store: any Store, schemas: SchemaRegistry, logger: Logger) {
        self.store = store
        self.schemas = schemas
        self.logger = logger
        (deletions, deleted) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        // Zones deleted before a stop may be waiting.
        deleted.yield()
    }

    /// Has the zones deleted so far purged soon.
    func zoneDeleted() {
        deleted.yield()
    }

    /// Resumes cut-off backfills, then purges deleted zones whenever one is deleted, until cancelled
    /// (between two steps, each its own transaction; what is left resumes at the next start).
    func run() async {
        do {
            try await resumeBackfills()
        } catch {
            logger.error("resuming index backfills failed; they resume at the next start", metadata: ["error": "\(error)"])
        }
        for await _ in deletions {
            do {
                let purged = try await store.purgeDeletedZones()
                if purged > 0 { logger.info("purged deleted zones", metadata: ["rows": "\(purged)"]) }
            } catch {
                logger.error(
                    "purging deleted zones failed; it runs again at the next deletion or start",
                    metadata: ["error": "\(error)"])
            }
        }
    }

    /// Finishes the backfills a stop cut off, by each container environment's schema as it is now.
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
