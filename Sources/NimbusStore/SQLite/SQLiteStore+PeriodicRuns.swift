import Foundation
import GRDB

extension SQLiteStore: PeriodicJobStore {
    package func claimPeriodicRun(_ job: String, every interval: TimeInterval, now: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO periodic_runs (job, started_at) VALUES (?, ?)
                    ON CONFLICT (job) DO UPDATE SET started_at = excluded.started_at
                    WHERE periodic_runs.started_at <= excluded.started_at - ?
                    """,
                arguments: [job, now.milliseconds, Int64(interval * 1000)])
            return db.changesCount == 1
        }
    }
}
