import Foundation
import NimbusStore
import PostgresNIO

extension PostgresStore: PeriodicJobStore {
    package func claimPeriodicRun(_ job: String, every interval: TimeInterval, now: Date) async throws -> Bool {
        // One statement: the row's lock makes claims from several nodes take turns, and the second of two at
        // one time sees the first's start and claims nothing.
        let claimed = try await rows(
            """
            INSERT INTO periodic_runs (job, started_at) VALUES (\(job), \(now.milliseconds))
            ON CONFLICT (job) DO UPDATE SET started_at = excluded.started_at
            WHERE periodic_runs.started_at <= excluded.started_at - \(Int64(interval * 1000))
            RETURNING job
            """)
        return !claimed.isEmpty
    }
}
