import Foundation
import NimbusCore
import NimbusStore

/// How a container's documents sit in their zone of the substrate. Every change is a `put`, so the
/// zone's sequence, change feed, push and watermarks serve documents as they serve the other services.
///
/// - `i/<item>`: the item as devices see it (`DocumentItem`: place, current version, conflict versions,
///   or its deletion), indexed by place (`parent/collision key`) and parent while live, under `trash`
///   while in Recently Deleted. Its size is its current and conflict versions' bytes (the quota counts it).
/// - `v/<item>/<version>`: a version no longer current or a resolved conflict, indexed by item.
/// - `c/<hash>`: a chunk this user uploaded (`ChunkHolding`), which they may name in a version and
///   download. Until a version names it, it counts its bytes against the quota; once one does, the
///   version counts them. `DocumentExpiry` removes holdings no version names any more, and uploads no
///   version named within a day.
/// - `dav/p/<item>` (`dav/p/` for the root): the WebDAV dead properties clients set on an item
///   (`DAVProperties`); devices never see them.
/// - `dav/f/<parent>/<collision key>`: one of Finder's own files (`._name`, `.DS_Store`) kept out of sync
///   for WebDAV (`DAVHandler.FinderFile`: its name and content; its size counts against the quota).
/// - `dav/l/<token>`: a WebDAV lock (`DAVLocks`), indexed as `davlock` so that every node finds the zone's
///   locks in one read.
enum DocumentKeys {
    static let itemPrefix = "i/"

    static func item(_ id: String) -> String { itemPrefix + id }
    static func version(_ item: String, _ version: String) -> String { "v/\(item)/\(version)" }
    static func chunk(_ hash: String) -> String { "c/" + hash }

    static let itemKind = "item"
    static let versionKind = "version"
    static let chunkKind = "chunk"

    static func placeKey(parent: String?, name: String) -> IndexValue {
        .text("\(parent ?? "")/\(DocumentNames.collisionKey(name))")
    }

    /// An item's index rows: its place and parent while live, `trash` while in Recently Deleted.
    static func itemRows(_ item: DocumentItem) -> [IndexEntry] {
        item.deletedAt == nil
            ? [
                IndexEntry(field: "place", value: placeKey(parent: item.parentID, name: item.name)),
                IndexEntry(field: "parent", value: .text(item.parentID ?? "")),
            ] : [IndexEntry(field: "trash", value: .text("1"))]
    }

    static func versionRows(item: String) -> [IndexEntry] { [IndexEntry(field: "item", value: .text(item))] }

    static let chunkRows = [IndexEntry(field: "held", value: .text("1"))]

    static func davProperties(_ item: String?) -> String { "dav/p/" + (item ?? "") }
    static func finderFile(parent: String?, name: String) -> String {
        "dav/f/\(parent ?? "")/\(DocumentNames.collisionKey(name))"
    }
    static let davLockPrefix = "dav/l/"
    static let davLockKind = "davlock"
    static let davLockRows = [IndexEntry(field: "lock", value: .text("1"))]

    /// The index rows an entry of a documents zone must have (`nimbus check`), by its key and payload.
    static func expectedIndex(key: String, payload: Data) throws -> ExpectedIndexRows? {
        let (kind, rows): (String, [IndexEntry])
        if key.hasPrefix(itemPrefix) {
            (kind, rows) = (itemKind, itemRows(try JSONDecoder().decode(DocumentItem.self, from: payload)))
        } else if key.hasPrefix("v/"), let item = key.split(separator: "/").dropFirst().first {
            (kind, rows) = (versionKind, versionRows(item: String(item)))
        } else if key.hasPrefix("c/") {
            (kind, rows) = (chunkKind, chunkRows)
        } else if key.hasPrefix(davLockPrefix) {
            (kind, rows) = (davLockKind, davLockRows)
        } else {
            return nil
        }
        return ExpectedIndexRows(kind: kind, rows: Set(rows + [IndexEntry(field: IndexEntry.keyField, value: .text(key))]))
    }

    /// Item IDs are minted by devices: 1–64 letters, digits, `-` and `_`.
    static func validateItemID(_ id: String) throws(NimbusError) {
        guard (1...64).contains(id.utf8.count),
            id.utf8.allSatisfy({
                $0 == 45 || $0 == 95 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)
            })
        else { throw .badRequest("an item ID is 1 to 64 letters, digits, \"-\" and \"_\", not \"\(id.prefix(80))\"") }
    }
}

/// What `c/<hash>` records: the chunk's size, when it was uploaded, and whether a version has named it.
struct ChunkHolding: Codable {
    var size: Int64
    var uploadedAt: Int64
    var named: Bool

    /// Writes the holding: its bytes count against the quota until a version names the chunk.
    func write(_ hash: String, in transaction: any ZoneTransaction) throws {
        let key = DocumentKeys.chunk(hash)
        try transaction.put(key, payload: try JSONEncoder().encode(self), size: named ? 0 : Int(size))
        try transaction.index(key, kind: DocumentKeys.chunkKind, rows: DocumentKeys.chunkRows)
    }

    static func read(_ hash: String, in transaction: any ZoneTransaction) throws -> ChunkHolding? {
        guard let payload = try transaction.entry(DocumentKeys.chunk(hash))?.payload else { return nil }
        return try JSONDecoder().decode(ChunkHolding.self, from: payload)
    }
}
