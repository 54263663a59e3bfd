import Foundation
import GRDB
import NimbusCore
import Synchronization

/// What a device remembers of one container between runs: the synced tree, the remote tree as the
/// server last described it (with each file's version, for downloads), each local file's identity
/// (its path and inode, and its content hash for a given size and modification time), and the change
/// token. Each step's outcome is written before the next step runs, so a daemon killed at any moment
/// resumes without losing a local edit or sending again what the server has.
///
/// Statements run for each item are prepared once per connection (`cachedStatement`): SQLite parsing them
/// again took a tenth of each daemon's CPU while 1,000 new files synced.
package final class DeviceJournal: Sendable {
    private let database: DatabaseQueue
    /// The database file, for a reader of its own (`allMetadata`).
    private let path: String
    private let observers = Mutex<[@Sendable (Set<ItemID>) -> Void]>([])

    package init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        database = try DatabaseQueue(path: path, configuration: configuration)
        // Outside a transaction: SQLite refuses to change the journal mode inside one.
        try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        // NORMAL: in WAL mode a killed daemon loses no committed step (only a power cut can take the last
        // few back, and the server tells identical content apart, so nothing is stored twice). A sync
        // per step made the journal, not the network, the bound on syncing many small files.
        try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("2026-11-24-journal") { db in
            try db.execute(
                sql: """
                    CREATE TABLE synced (item_id TEXT PRIMARY KEY, parent_id TEXT, name TEXT NOT NULL, kind TEXT NOT NULL, content TEXT);
                    CREATE TABLE remote (item_id TEXT PRIMARY KEY, item BLOB NOT NULL);
                    CREATE TABLE local (item_id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE, inode INTEGER NOT NULL,
                        size INTEGER NOT NULL, modified INTEGER NOT NULL, content TEXT);
                    CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    """)
        }
        migrator.registerMigration("2026-11-24-remote-columns") { db in
            // The remote tree read from columns: decoding every item's JSON took seconds a round at 100,000 items.
            try db.execute(
                sql: """
                    ALTER TABLE remote ADD COLUMN parent_id TEXT;
                    ALTER TABLE remote ADD COLUMN name TEXT NOT NULL DEFAULT '';
                    ALTER TABLE remote ADD COLUMN kind TEXT NOT NULL DEFAULT 'file';
                    ALTER TABLE remote ADD COLUMN content TEXT;
                    ALTER TABLE remote ADD COLUMN conflicts INTEGER NOT NULL DEFAULT 0;
                    """)
            for data in try Data.fetchAll(db, sql: "SELECT item FROM remote") {
                try Self.storeRemote(try JSONDecoder().decode(DocumentItem.self, from: data), db)
            }
        }
        migrator.registerMigration("2026-11-25-remote-metadata") { db in
            // What apps' metadata queries list (size and dates), read without decoding each item.
            try db.execute(
                sql: """
                    ALTER TABLE remote ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE remote ADD COLUMN modified INTEGER;
                    ALTER TABLE remote ADD COLUMN created INTEGER;
                    CREATE INDEX remote_in_conflict ON remote(conflicts) WHERE conflicts > 0;
                    """)
            for data in try Data.fetchAll(db, sql: "SELECT item FROM remote") {
                try Self.storeRemote(try JSONDecoder().decode(DocumentItem.self, from: data), db)
            }
        }
        try migrator.migrate(database)
    }

    // MARK: - Changes

    /// Called after each write with the items whose remote or local row it changed.
    package func observe(_ observer: @escaping @Sendable (Set<ItemID>) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    private func changed(_ ids: some Sequence<ItemID>) {
        let ids = Set(ids)
        guard !ids.isEmpty else { return }
        for observer in observers.withLock({ $0 }) { observer(ids) }
    }

    // MARK: - Synced tree

    package func syncedTree() async throws -> SyncTree {
        try await database.read { db in
            try Self.tree(db, table: "synced")
        }
    }

    /// The item as the synced tree holds it.
    package func syncedItem(_ id: ItemID) async throws -> SyncItem? {
        try await database.read { db in
            var item: SyncItem?
            try SQLiteColumns.forEachRow(
                db, "SELECT item_id, parent_id, name, kind, content FROM synced WHERE item_id = ?", [id.rawValue]
            ) { item = Self.syncItem($0) }
            return item
        }
    }

    /// What a round plans from: the remote tree, and the synced tree over it, read as the rows where the two differ.
    package func roundTrees() async throws -> (remote: SyncTree, synced: SyncedTree) {
        try await database.read { db in
            let remote = try Self.tree(db, table: "remote")
            var differences = ItemTable<SyncItem?>()
            try Self.forEachSyncedRowNotTheServers(db) { id, item in differences[id] = .some(item) }
            let unsynced = "SELECT item_id FROM remote r WHERE NOT EXISTS (SELECT 1 FROM synced s WHERE s.item_id = r.item_id)"
            try SQLiteColumns.forEachRow(db, unsynced, []) { row in differences[ItemID(row.text(0))] = .some(nil) }
            return (remote, SyncedTree(base: remote, differences: differences))
        }
    }

    /// Which of `ids` the synced tree holds.
    package func syncedIDs(among ids: [ItemID]) async throws -> Set<ItemID> {
        try await database.read { db in
            Set(
                try ids.filter {
                    try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM synced WHERE item_id = ?"), arguments: [$0.rawValue])
                        != nil
                })
        }
    }

    // MARK: - Remote tree

    package var syncToken: String? {
        get async throws {
            try await database.read { db in try String.fetchOne(db, sql: "SELECT value FROM state WHERE key = 'token'") }
        }
    }

    /// Applies a page of the server's changes and its token together.
    package func applyRemote(_ page: DocumentChangesResponse) async throws {
        try await database.write { db in
            for item in page.items { try Self.storeRemote(item, db) }
            for id in page.removed { try Self.deleteRemote(id, db) }
            try db.execute(sql: "INSERT OR REPLACE INTO state VALUES ('token', ?)", arguments: [page.syncToken])
            if let extensions = page.packageExtensions {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO state VALUES ('packages', ?)", arguments: [extensions.joined(separator: ",")])
            }
        }
        changed(page.items.map { ItemID($0.itemID) } + page.removed.map(ItemID.init))
    }

    /// Forgets the server's side (its items and the token) for a server whose history no longer holds this
    /// device's position (restored from a backup): the next fetch starts from nothing, and
    /// `finishResync` then settles what both sides still agree on.
    package func forgetServer() async throws {
        let ids = try await database.write { db in
            let ids = try String.fetchAll(db, sql: "SELECT item_id FROM remote")
            try db.execute(sql: "DELETE FROM remote; DELETE FROM state WHERE key = 'token'")
            try db.execute(sql: "INSERT OR REPLACE INTO state VALUES ('resync', '1')")
            return ids
        }
        changed(ids.map(ItemID.init))
    }

    /// After a fetch from nothing, keeps the agreement only on items the server holds just as they were
    /// agreed: the rest is planned as by a device without a journal, so a file only this device still has
    /// is uploaded (not taken for one the server deleted), and different contents are both kept; a local
    /// delete or move of an item the server still holds as agreed goes to the server as usual.
    package func finishResync() async throws {
        let forgotten = try await database.write { db -> [ItemID] in
            guard try String.fetchOne(db, sql: "SELECT value FROM state WHERE key = 'resync'") != nil else { return [] }
            var stale: [ItemID] = []
            try Self.forEachSyncedRowNotTheServers(db) { id, _ in stale.append(id) }
            for id in stale { try Self.storeSynced(id, nil, db) }
            try db.execute(sql: "DELETE FROM state WHERE key = 'resync'")
            return stale
        }
        changed(forgotten)
    }

    /// Items as the server answered them outside the changes feed (a resolution, say); the feed brings
    /// them again later, unchanged.
    package func storeRemoteItems(_ items: [DocumentItem]) async throws {
        try await database.write { db in for item in items { try Self.storeRemote(item, db) } }
        changed(items.map { ItemID($0.itemID) })
    }

    /// The folder extensions the container treats as file packages, as the server last said.
    package var packageExtensions: Set<String> {
        get async throws {
            try await database.read { db in
                let text = try String.fetchOne(db, sql: "SELECT value FROM state WHERE key = 'packages'") ?? ""
                return Set(text.split(separator: ",").map(String.init))
            }
        }
    }

    /// The server's items of `ids` (those it has), with their versions.
    package func remoteItems(_ ids: [ItemID]) async throws -> [ItemID: DocumentItem] {
        let decoder = JSONDecoder()
        return try await database.read { db in
            var items: [ItemID: DocumentItem] = [:]
            for id in ids {
                guard
                    let data = try Data.fetchOne(
                        db.cachedStatement(sql: "SELECT item FROM remote WHERE item_id = ?"), arguments: [id.rawValue])
                else { continue }
                items[id] = try decoder.decode(DocumentItem.self, from: data)
            }
            return items
        }
    }

    package func remoteItem(_ id: ItemID) async throws -> DocumentItem? { try await remoteItems([id])[id] }

    /// How many items the server holds with unresolved conflict versions.
    package func conflictCount() async throws -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM remote WHERE conflicts > 0") ?? 0 }
    }

    // MARK: - Local identities

    package func localFiles() async throws -> [LocalFile] {
        try await database.read { db in
            var files: [LocalFile] = []
            files.reserveCapacity(try Int.fetchOne(db, sql: "SELECT count(*) FROM local") ?? 0)
            try SQLiteColumns.forEachRow(db, "SELECT \(Self.localColumns) FROM local", []) { files.append(Self.localFile($0)) }
            return files
        }
    }

    /// The item's file on this device as the last scan recorded it.
    package func localFile(_ id: ItemID) async throws -> LocalFile? {
        try await database.read { db in
            var file: LocalFile?
            try SQLiteColumns.forEachRow(db, "SELECT \(Self.localColumns) FROM local WHERE item_id = ?", [id.rawValue]) {
                file = Self.localFile($0)
            }
            return file
        }
    }

    /// The item at `path` (relative to the container's folder): the one the last scan found there (as its file or
    /// its placeholder), else the one the server holds at that path.
    package func itemID(atPath path: String) async throws -> ItemID? {
        try await database.read { db in
            let onDisk = try String.fetchOne(
                db, sql: "SELECT item_id FROM local WHERE path IN (?, ?)", arguments: [path, Placeholder.path(for: path)])
            if let onDisk { return ItemID(onDisk) }
            var parent: String?
            for name in path.split(separator: "/", omittingEmptySubsequences: false) {
                parent = try String.fetchOne(
                    db, sql: "SELECT item_id FROM remote WHERE parent_id IS ? AND name = ?", arguments: [parent, String(name)])
                guard parent != nil else { return nil }
            }
            return parent.map(ItemID.init)
        }
    }

    private static let localColumns = "item_id, path, inode, size, modified, content"

    /// A `local` row read as `localColumns`, by position.
    private static func localFile(_ row: SQLiteColumns) -> LocalFile {
        LocalFile(
            id: ItemID(row.text(0)), path: row.text(1), inode: UInt64(bitPattern: row.int64(2)), size: row.int64(3),
            modified: row.int64(4), contentKey: contentKey(row, 5))
    }

    /// The content hash in `column`, read without a string of its own.
    private static func contentKey(_ row: SQLiteColumns, _ column: Int32) -> ContentKey? {
        row.isNull(column) ? nil : row.bytes(column, ContentKey.init(utf8:))
    }

    /// Makes the journal's local files those of a scan, writing only what differs from `known` (what the
    /// journal held when the scan began): a round with nothing changed writes nothing.
    package func updateLocalFiles(from known: [LocalFile], to scan: some LocalFileTable) async throws {
        let (changed, removed) = Self.differences(from: known, to: scan)
        guard !changed.isEmpty || !removed.isEmpty else { return }
        try await database.write { db in
            // Deletes first: two files that swapped paths must not meet on the unique path.
            for id in removed + changed.map(\.id) { try Self.deleteLocal(id, db) }
            for file in changed {
                try db.cachedStatement(sql: "DELETE FROM local WHERE path = ?").execute(arguments: [file.path])
                try Self.insertLocal(file, db)
            }
        }
        self.changed(changed.map(\.id) + removed)
    }

    /// The files `scan` holds other than `known` had them (new ones too), and the items it no longer has.
    /// Compared in place rather than through a dictionary of `known`: at 100,000 files such a copy was 25 MB
    /// of a round's peak memory. (`known` holds each ID once: the IDs are the table's primary key.)
    private static func differences(from known: [LocalFile], to scan: some LocalFileTable) -> (
        changed: [LocalFile], removed: [ItemID]
    ) {
        var changed: [LocalFile] = []
        var removed: [ItemID] = []
        // A bit a scanned item rather than a set of the known IDs (4 MB at 100,000 files).
        var wasKnown = [Bool](repeating: false, count: scan.count)
        for file in known {
            if let position = scan.position(of: file.id) {
                wasKnown[position] = true
                let now = scan.file(at: position)
                if now != file { changed.append(now) }
            } else {
                removed.append(file.id)
            }
        }
        for (position, seen) in wasKnown.enumerated() where !seen { changed.append(scan.file(at: position)) }
        return (changed, removed)
    }

    /// Records a file or folder the engine itself wrote, moved or created, so the next scan knows it.
    package func setLocalFile(_ file: LocalFile) async throws {
        let displaced = try await database.write { db in try Self.storeLocal(file, db) }
        changed([file.id] + displaced)
    }

    /// What a step on the disk did to an item's file.
    package enum LocalChange: Sendable {
        /// The file or folder is now here, as the engine wrote or moved it.
        case placed(LocalFile)
        case removed
        case unchanged
    }

    /// A step the engine did on the disk: where it left the item's file and the synced state the step
    /// reached, in one transaction.
    package func recordDiskStep(_ id: ItemID, _ change: LocalChange, synced: SyncItem?) async throws {
        let displaced = try await database.write { db in
            var displaced: [ItemID] = []
            switch change {
            case .placed(let file): displaced = try Self.storeLocal(file, db)
            case .removed: try Self.deleteLocal(id, db)
            case .unchanged: break
            }
            try Self.storeSynced(id, synced, db)
            return displaced
        }
        if case .unchanged = change { return }
        changed([id] + displaced)
    }

    /// What the server answered to a batch of this device's operations, in one transaction: each
    /// item as the server now has it, and the synced state the planner expected (under the item the
    /// server merged a new one into, if it did).
    package func recordCommitted(_ outcomes: [(local: ItemID, remote: DocumentItem?, synced: SyncItem?)]) async throws {
        try await database.write { db in
            for outcome in outcomes {
                let id = outcome.remote.map { ItemID($0.itemID) } ?? outcome.local
                if let item = outcome.remote { try Self.storeRemote(item, db) }
                if id != outcome.local {
                    try Self.deleteLocal(id, db)
                    try db.cachedStatement(sql: "UPDATE local SET item_id = ? WHERE item_id = ?").execute(
                        arguments: [id.rawValue, outcome.local.rawValue])
                }
                try Self.storeSynced(id, outcome.synced, db)
            }
        }
        changed(outcomes.flatMap { [$0.local] + ($0.remote.map { [ItemID($0.itemID)] } ?? []) })
    }

    // MARK: - Metadata

    /// The remote and local facts of `ids` (nil: of every item) that apps' metadata queries list.
    package func metadata(of ids: Set<ItemID>?) async throws -> MetadataFacts {
        guard let ids else { return try await allMetadata() }
        return try await database.read { db in
            var facts = MetadataFacts()
            let all = ids.map(\.rawValue)
            for start in stride(from: 0, to: all.count, by: 500) {
                let batch = Array(all[start..<min(start + 500, all.count)])
                let filter = "WHERE item_id IN (\(Array(repeating: "?", count: batch.count).joined(separator: ",")))"
                try Self.readRemoteFacts(db, filter, StatementArguments(batch), into: &facts)
                try Self.readLocalFacts(db, filter, StatementArguments(batch), into: &facts)
            }
            return facts
        }
    }

    /// Every item's facts, the two tables read at once: the local one through a read-only connection of its
    /// own (in WAL mode readers share the file). Reading 100,000 rows of each is most of the wait for an
    /// app's first query. The two reads may see commits between them; each commit's notice makes the index
    /// read its items again.
    private func allMetadata() async throws -> MetadataFacts {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        let reader = try DatabaseQueue(path: path, configuration: configuration)
        async let local = reader.read { db in
            var facts = MetadataFacts()
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM local") ?? 0
            facts.local.reserveCapacity(count)
            try Self.readLocalFacts(db, "", [], into: &facts)
            return facts
        }
        let remote = try await database.read { db in
            var facts = MetadataFacts()
            facts.remote.reserveCapacity(try Int.fetchOne(db, sql: "SELECT count(*) FROM remote") ?? 0)
            try Self.readRemoteFacts(db, "", [], into: &facts)
            return facts.remote
        }
        var facts = try await local
        facts.remote = remote
        return facts
    }

    /// Adds the `remote` rows `filter` selects to `facts`.
    private static func readRemoteFacts(
        _ db: Database, _ filter: String, _ arguments: StatementArguments, into facts: inout MetadataFacts
    ) throws {
        let sql = "SELECT item_id, parent_id, name, kind, content, conflicts, size, modified, created FROM remote \(filter)"
        try SQLiteColumns.forEachRow(db, sql, arguments) { row in
            let remote = RemoteFacts(
                parent: row.optionalText(1).map(ItemID.init), name: row.text(2),
                kind: ItemKind(rawValue: row.text(3)) ?? .file,
                content: contentKey(row, 4), conflicts: Int(row.int64(5)),
                size: row.int64(6), modified: row.optionalInt64(7), created: row.optionalInt64(8))
            facts.remote[ItemID(row.text(0))] = remote
        }
    }

    /// Adds the `local` rows `filter` selects to `facts`.
    private static func readLocalFacts(
        _ db: Database, _ filter: String, _ arguments: StatementArguments, into facts: inout MetadataFacts
    ) throws {
        try SQLiteColumns.forEachRow(db, "SELECT item_id, path, size, modified, content FROM local \(filter)", arguments) {
            row in
            let path = row.text(1)
            let local = LocalFacts(
                isPlaceholder: Placeholder.isPlaceholder(path: path), size: row.int64(2), modified: row.int64(3),
                content: contentKey(row, 4))
            facts.local[ItemID(row.text(0))] = LocalEntry(facts: local, path: path)
        }
    }

    // MARK: - Rows

    /// The tree a table of (item_id, parent_id, name, kind, content) holds, columns read by position.
    private static func tree(_ db: Database, table: String) throws -> SyncTree {
        var items = ItemTable<SyncItem>()
        // Sized once: grown as it fills, a table of 100,000 items is held twice while it moves to its last size.
        items.reserveCapacity(try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0)
        try SQLiteColumns.forEachRow(db, "SELECT item_id, parent_id, name, kind, content FROM \(table)", []) { row in
            items[ItemID(row.text(0))] = syncItem(row)
        }
        return SyncTree(items)
    }

    /// Each row of the synced tree that is not the server's (the server lacks the item, or holds it at another place,
    /// of another kind or with other content), as its item: found in one join rather than by reading both trees whole.
    /// Compared column by column as the rows are stored, so equal texts read as equal items.
    private static func forEachSyncedRowNotTheServers(_ db: Database, _ body: (ItemID, SyncItem) throws -> Void) throws {
        let differing = """
            SELECT s.item_id, s.parent_id, s.name, s.kind, s.content FROM synced s LEFT JOIN remote r ON r.item_id = s.item_id
            WHERE r.item_id IS NULL OR s.parent_id IS NOT r.parent_id OR s.name IS NOT r.name OR s.kind IS NOT r.kind
                OR s.content IS NOT r.content
            """
        try SQLiteColumns.forEachRow(db, differing, []) { row in try body(ItemID(row.text(0)), syncItem(row)) }
    }

    /// The item of a row of `item_id, parent_id, name, kind, content`.
    private static func syncItem(_ row: SQLiteColumns) -> SyncItem {
        SyncItem(
            place: Place(parent: row.optionalText(1).map(ItemID.init), name: row.text(2)),
            kind: ItemKind(rawValue: row.text(3)) ?? .file, contentKey: contentKey(row, 4))
    }

    private static func storeSynced(_ id: ItemID, _ item: SyncItem?, _ db: Database) throws {
        guard let item else {
            try db.cachedStatement(sql: "DELETE FROM synced WHERE item_id = ?").execute(arguments: [id.rawValue])
            return
        }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO synced VALUES (?, ?, ?, ?, ?)").execute(
            arguments: [id.rawValue, item.place.parent?.rawValue, item.place.name, item.kind.rawValue, item.contentKey?.text])
    }

    /// An item as the server has it: a row while it is live, none once it is in Recently Deleted.
    private static func storeRemote(_ item: DocumentItem, _ db: Database) throws {
        guard item.deletedAt == nil else { return try deleteRemote(item.itemID, db) }
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO remote (item_id, item, parent_id, name, kind, content, conflicts, size, modified, created)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                item.itemID, try JSONEncoder().encode(item), item.parentID, item.name, item.kind.rawValue,
                item.current?.content.contentHash, item.conflicts.count, item.current?.content.size ?? 0,
                item.current?.content.modifiedAt, item.createdAt,
            ])
    }

    private static func deleteRemote(_ id: String, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM remote WHERE item_id = ?").execute(arguments: [id])
    }

    /// Stores where a file is, in place of what the journal knew at that path; the items it displaced.
    private static func storeLocal(_ file: LocalFile, _ db: Database) throws -> [ItemID] {
        let displaced = try String.fetchAll(
            db.cachedStatement(sql: "SELECT item_id FROM local WHERE path = ?"), arguments: [file.path])
        try db.cachedStatement(sql: "DELETE FROM local WHERE item_id = ? OR path = ?").execute(
            arguments: [file.id.rawValue, file.path])
        try insertLocal(file, db)
        return displaced.map(ItemID.init)
    }

    private static func insertLocal(_ file: LocalFile, _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT INTO local VALUES (?, ?, ?, ?, ?, ?)").execute(
            arguments: [
                file.id.rawValue, file.path, Int64(bitPattern: file.inode), file.size, file.modified, file.contentKey?.text,
            ])
    }

    private static func deleteLocal(_ id: ItemID, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM local WHERE item_id = ?").execute(arguments: [id.rawValue])
    }
}

/// Files by item ID, as a scan finds them: what `DeviceJournal.updateLocalFiles` records.
package protocol LocalFileTable {
    var count: Int { get }
    func position(of id: ItemID) -> Int?
    func file(at position: Int) -> LocalFile
}

extension ItemTable: LocalFileTable where Value == LocalFile {
    package func file(at position: Int) -> LocalFile { values[position] }
}

/// A file or folder on the disk as the journal knows it.
package struct LocalFile: Sendable, Hashable {
    package var id: ItemID
    /// Relative to the container's folder, components joined by "/".
    package var path: String
    package var inode: UInt64
    package var size: Int64
    /// Modification time in nanoseconds.
    package var modified: Int64
    /// SHA-256 of the content (nil for folders), inline: a round holds what the journal knew of every file and
    /// what the scan finds.
    var contentKey: ContentKey?

    package var content: String? {
        get { contentKey?.text }
        set { contentKey = newValue.map(ContentKey.init) }
    }

    package init(id: ItemID, path: String, inode: UInt64, size: Int64, modified: Int64, content: String?) {
        self.init(id: id, path: path, inode: inode, size: size, modified: modified, contentKey: content.map(ContentKey.init))
    }

    init(id: ItemID, path: String, inode: UInt64, size: Int64, modified: Int64, contentKey: ContentKey?) {
        self.id = id
        self.path = path
        self.inode = inode
        self.size = size
        self.modified = modified
        self.contentKey = contentKey
    }

    /// Whether the item is evicted: its file on the disk is a placeholder (`Placeholder`).
    package var isPlaceholder: Bool { Placeholder.isPlaceholder(path: path) }
}

/// What apps' metadata queries list of some items: as the server last described them, and as they are on the disk.
/// In item tables (100,000 items' facts in a dictionary of each were three times their size, mostly empty
/// slots, and filling them touched as many fresh pages).
package struct MetadataFacts: Sendable {
    var remote = ItemTable<RemoteFacts>()
    var local = ItemTable<LocalEntry>()
}

/// A file or folder on the disk as the journal knows it, for apps' metadata queries: its facts, and its path on
/// the disk relative to the container's folder (a placeholder's own name, when evicted). A query reads every
/// item's facts but few paths, so the facts are read in place, without the path.
package struct LocalEntry: Sendable {
    var facts: LocalFacts
    var path: String
}

/// An item as the server last described it, for apps' metadata queries.
package struct RemoteFacts: Sendable, Hashable {
    var parent: ItemID?
    var name: String
    var kind: ItemKind
    var content: ContentKey?
    var conflicts: Int
    var size: Int64
    /// Milliseconds since 1970.
    var modified: Int64?
    var created: Int64?
}

/// A file or folder on the disk as the journal knows it, for apps' metadata queries.
package struct LocalFacts: Sendable, Hashable {
    /// Whether only the item's placeholder is on the disk (it is evicted).
    var isPlaceholder: Bool
    var size: Int64
    /// Nanoseconds since 1970.
    var modified: Int64
    var content: ContentKey?
}
