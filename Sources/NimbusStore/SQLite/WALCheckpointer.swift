import Dispatch
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the write-ahead log into the database file on a connection and a thread of its own, so that
/// no commit waits for a checkpoint.
///
/// SQLite's automatic checkpoint runs inside the commit that takes the log past its threshold and holds
/// the writer while it copies and syncs every page the log holds: while a zone of a million records was
/// purged, that stalled other writes by 140 ms at p99. A passive checkpoint on another connection runs
/// beside the writer instead. Starting one once the log holds 10,000 pages, not SQLite's 1,000, copies a
/// page that many commits rewrite (the ends of the indexes writes append to) once, not once per few
/// commits; every commit is still synced to the log.
final class WALCheckpointer: Sendable {
    /// Log pages after which a checkpoint starts beside the writer.
    static let backgroundPages: Int32 = 10_000
    /// Log pages after which the writer finishes the copy itself whatever is left, because the
    /// checkpoints beside it do not catch up (writes that never pause, long reads holding them back);
    /// the log would otherwise grow without bound. What is left is what was written since the last
    /// checkpoint beside it, not the whole log.
    static let inlinePages: Int32 = 40_000
    /// Pages left after a checkpoint beside the writer that the writer copies itself (about 1 MB, a
    /// millisecond or two), so that the log can restart.
    static let finishingPages: Int32 = 256
    /// The log's file is cut back to this size when it restarts, so one burst of writes does not keep its
    /// disk space.
    static let retainedLogBytes = 64 << 20

    private let path: String
    /// Opened at the first checkpoint, so an idle server holds no connection for it.
    private let connection = Mutex<DatabaseQueue?>(nil)
    private let running = Atomic(false)
    /// How many of the log's pages the last checkpoint beside the writer copied (every page the log
    /// held when it began), or 0.
    private let copiedPages = Atomic<Int32>(0)
    private let queue = DispatchQueue(label: "nimbus.checkpoint", qos: .utility)

    init(path: String) { self.path = path }

    /// Replaces the writer's automatic checkpoint with this one (`db` must be the writer connection; the
    /// checkpointer must outlive it).
    func install(on db: Database) throws {
        try db.execute(sql: "PRAGMA journal_size_limit = \(Self.retainedLogBytes)")
        sqlite3_wal_hook(db.sqliteConnection, walHook, Unmanaged.passUnretained(self).toOpaque())
    }

    static func uninstall(from db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, nil, nil)
    }

    /// After each commit, on the writer's thread: how many pages the log holds.
    fileprivate func committed(_ writer: OpaquePointer?, logPages: Int32) {
        // The log restarts from its start only at a write transaction that begins with every page of it
        // copied, and the writer begins the next one as soon as it commits, before a checkpoint beside it
        // can copy the pages just committed. So once one has copied all but a few hundred pages, the
        // writer copies those itself; while more remain, another checkpoint beside it copies them (each
        // shorter than the one before, as long as commits add pages more slowly than a pass copies them).
        let copied = copiedPages.load(ordering: .acquiring)
        if logPages >= Self.inlinePages || (copied > 0 && logPages - copied <= Self.finishingPages) {
            copiedPages.store(0, ordering: .releasing)
            sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            return
        }
        guard logPages >= Self.backgroundPages,
            running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        queue.async {
            defer { self.running.store(false, ordering: .releasing) }
            // A checkpoint that fails (another one runs, the disk is full) leaves the log as it is; the
            // next commit past the threshold tries again.
            try? self.checkpoint()
        }
    }

    private func checkpoint() throws {
        let database = try connection.withLock { connection in
            if let connection { return connection }
            let opened = try DatabaseQueue(path: path)
            connection = opened
            return opened
        }
        // A reader's snapshot can hold back the pages after it; the next commit past the threshold
        // starts another checkpoint for them.
        let log = try database.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        if log.checkpointedFrameCount >= log.walFrameCount {
            copiedPages.store(Int32(log.checkpointedFrameCount), ordering: .releasing)
        }
    }
}

private func walHook(
    _ context: UnsafeMutableRawPointer?, _ writer: OpaquePointer?, _ database: UnsafePointer<CChar>?, _ pages: Int32
) -> Int32 {
    guard let context else { return SQLITE_OK }
    Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(writer, logPages: pages)
    return SQLITE_OK
}
