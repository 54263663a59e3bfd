import Foundation
import NimbusCore
import NimbusStore

/// Applies a batch's operations in one zone transaction, each whole or not at all: every check an
/// operation makes comes before its first write, so one that fails leaves nothing behind.
///
/// Nothing is lost: a save on a stale base keeps both versions (the later one current, the other an
/// unresolved conflict); a save for an item in Recently Deleted brings it back; a new file named like
/// an existing one becomes a version of it, a new folder named like an existing one becomes that folder;
/// a name taken by another item gets a free one ("name 2");
/// a delete is refused when the file changed since the device last saw it.
final class DocumentWriter {
    private let transaction: any ZoneTransaction
    private let device: String
    private let now: Int64
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()
    /// New folders of this batch merged into folders of their name (device's ID → the existing folder's),
    /// so that the batch's later operations inside them land in the existing folder.
    private var mergedFolders: [String: String] = [:]
    /// Items as this batch read or wrote them (nil: none), so that a batch of files saved into one folder decodes
    /// that folder once to check it (`requireParent`) rather than once a file.
    private var items: [String: DocumentItem?] = [:]

    init(transaction: any ZoneTransaction, device: String, now: Int64) {
        self.transaction = transaction
        self.device = device
        self.now = now
    }

    func apply(_ operation: DocumentOperation) throws -> DocumentResult {
        var operation = operation
        if let parent = operation.parentID, let merged = mergedFolders[parent] { operation.parentID = merged }
        switch operation.operationType {
        case .save:
            let unnamed = try requireHeld(operation.content)
            let result = try save(operation)
            // After the save's own checks and writes, so that a refused save changes nothing.
            try markNamed(unnamed)
            return result
        case .move: return try move(operation)
        case .delete: return try delete(operation)
        case .resolve: return try resolve(operation)
        case .restore: return try restore(operation)
        case .purge: return try purge(operation)
        }
    }

    // MARK: - Operations

    private func save(_ operation: DocumentOperation) throws -> DocumentResult {
        guard let kind = operation.kind, let name = operation.name else {
            throw NimbusError.badRequest("a save names the item's kind and name")
        }
        let version = operation.content.map {
            DocumentVersion(
                versionID: UUIDString.timeOrdered().uuidString.lowercased(), content: $0, device: device,
                baseContentHash: operation.baseContentHash, savedAt: now)
        }
        if var item = try item(operation.itemID), item.deletedAt == nil {
            guard item.kind == kind else {
                throw NimbusError(.conflict, "item \(item.itemID) is a \(item.kind.rawValue), not a \(kind.rawValue)")
            }
            if let version, let current = item.current, operation.baseContentHash != current.content.contentHash,
                version.content.contentHash != current.content.contentHash
            {
                keepBoth(version, in: &item)
                return DocumentResult(itemID: item.itemID, outcome: .conflict, item: try write(item))
            }
            if operation.parentID != item.parentID || name != item.name {
                try requireParent(operation.parentID, for: item.itemID)
                item.parentID = operation.parentID
                item.name = try freeName(name, in: operation.parentID, for: item.itemID)
            }
            if let version, version.content.contentHash != item.current?.content.contentHash {
                if let current = item.current { try archive(current, of: item.itemID) }
                item.current = version
            }
            return DocumentResult(itemID: item.itemID, outcome: .applied, item: try write(item))
        }
        try requireParent(operation.parentID, for: operation.itemID)
        if var deleted = try item(operation.itemID) {
            // Edited on one device while deleted on another: the edit wins, and the item comes back.
            deleted.kind = kind
            deleted.parentID = operation.parentID
            deleted.name = try freeName(name, in: operation.parentID, for: deleted.itemID)
            deleted.deletedAt = nil
            if let version {
                if let current = deleted.current { try archive(current, of: deleted.itemID) }
                deleted.current = version
            }
            return DocumentResult(itemID: deleted.itemID, outcome: .applied, item: try write(deleted))
        }
        guard transaction.state.liveEntries < DocumentNames.maxEntries else {
            throw NimbusError(
                .quotaExceeded, "a container holds at most \(DocumentNames.maxEntries) items, versions and chunks")
        }
        if kind == .folder, let existing = try occupant(of: name, in: operation.parentID), existing.kind == .folder {
            // The same new folder on two devices (each app made its `Documents`, say): one folder, holding both's items.
            mergedFolders[operation.itemID] = existing.itemID
            return DocumentResult(itemID: operation.itemID, outcome: .merged, item: existing)
        }
        if kind != .folder, let version, var existing = try occupant(of: name, in: operation.parentID),
            existing.kind == kind
        {
            // The same new name on two devices: one item, with both contents.
            keepBoth(version, in: &existing)
            return DocumentResult(itemID: operation.itemID, outcome: .merged, item: try write(existing))
        }
        let item = DocumentItem(
            itemID: operation.itemID, parentID: operation.parentID,
            name: try freeName(name, in: operation.parentID, for: operation.itemID), kind: kind, current: version,
            createdAt: now)
        return DocumentResult(itemID: item.itemID, outcome: .applied, item: try write(item))
    }

    private func move(_ operation: DocumentOperation) throws -> DocumentResult {
        guard let name = operation.name else { throw NimbusError.badRequest("a move names the item's new name") }
        var item = try liveItem(operation.itemID)
        if operation.parentID != item.parentID || name != item.name {
            try requireParent(operation.parentID, for: item.itemID)
            item.parentID = operation.parentID
            item.name = try freeName(name, in: operation.parentID, for: item.itemID)
            item = try write(item)
        }
        return DocumentResult(itemID: item.itemID, outcome: .applied, item: item)
    }

    private func delete(_ operation: DocumentOperation) throws -> DocumentResult {
        guard var item = try item(operation.itemID) else { throw NimbusError.notFound("no item \(operation.itemID)") }
        if item.deletedAt != nil { return DocumentResult(itemID: item.itemID, outcome: .applied, item: item) }
        if item.kind == .folder {
            guard try transaction.keys(kind: DocumentKeys.itemKind, field: "parent", value: .text(item.itemID)).isEmpty else {
                throw NimbusError(.conflict, "folder \(item.name) is not empty; delete what it holds first")
            }
        } else if operation.baseContentHash != item.current?.content.contentHash {
            throw NimbusError(.conflict, "\(item.name) changed since this device saw it; the change wins over the delete")
        }
        item.deletedAt = now
        return DocumentResult(itemID: item.itemID, outcome: .applied, item: try write(item))
    }

    private func resolve(_ operation: DocumentOperation) throws -> DocumentResult {
        guard let versionIDs = operation.versionIDs, !versionIDs.isEmpty else {
            throw NimbusError.badRequest("a resolve names the conflict versions it resolves")
        }
        var item = try liveItem(operation.itemID)
        for versionID in versionIDs where !item.conflicts.contains(where: { $0.versionID == versionID }) {
            throw NimbusError.notFound("\(item.name) has no unresolved conflict version \(versionID)")
        }
        for version in item.conflicts where versionIDs.contains(version.versionID) { try archive(version, of: item.itemID) }
        item.conflicts.removeAll { versionIDs.contains($0.versionID) }
        return DocumentResult(itemID: item.itemID, outcome: .applied, item: try write(item))
    }

    private func restore(_ operation: DocumentOperation) throws -> DocumentResult {
        guard var item = try item(operation.itemID), item.deletedAt != nil else {
            throw NimbusError.notFound("no item \(operation.itemID) in Recently Deleted")
        }
        var parent = operation.parentID ?? item.parentID
        if operation.parentID == nil, let original = parent {
            let folder = try self.item(original)
            if folder == nil || folder?.deletedAt != nil { parent = nil }  // its folder is gone: back at the root
        }
        try requireParent(parent, for: item.itemID)
        item.parentID = parent
        item.name = try freeName(operation.name ?? item.name, in: parent, for: item.itemID)
        item.deletedAt = nil
        return DocumentResult(itemID: item.itemID, outcome: .applied, item: try write(item))
    }

    private func purge(_ operation: DocumentOperation) throws -> DocumentResult {
        guard let item = try item(operation.itemID) else { throw NimbusError.notFound("no item \(operation.itemID)") }
        guard item.deletedAt != nil else {
            throw NimbusError(.conflict, "\(item.name) is not in Recently Deleted; delete it first")
        }
        try remove(item.itemID)
        return DocumentResult(itemID: item.itemID, outcome: .applied)
    }

    /// Removes an item and its history for good.
    func remove(_ id: String) throws {
        items[id] = nil
        for key in try transaction.keys(kind: DocumentKeys.versionKind, field: "item", value: .text(id)) {
            try transaction.put(key, payload: nil, size: 0)
        }
        try transaction.put(DocumentKeys.item(id), payload: nil, size: 0)
        items[id] = .some(nil)
    }

    // MARK: - Reads and checks

    func item(_ id: String) throws -> DocumentItem? {
        if let known = items[id] { return known }
        let item = try transaction.entry(DocumentKeys.item(id))?.payload.map { try decoder.decode(DocumentItem.self, from: $0) }
        items[id] = item
        return item
    }

    private func liveItem(_ id: String) throws -> DocumentItem {
        guard let item = try item(id), item.deletedAt == nil else { throw NimbusError.notFound("no item \(id)") }
        return item
    }

    private func occupant(of name: String, in parent: String?) throws -> DocumentItem? {
        let keys = try transaction.keys(
            kind: DocumentKeys.itemKind, field: "place", value: DocumentKeys.placeKey(parent: parent, name: name))
        return try keys.first.flatMap { try item(String($0.dropFirst(DocumentKeys.itemPrefix.count))) }
    }

    /// The name itself when no other item holds it in that folder (ignoring case and Unicode
    /// normalisation), else the first free "name 2", "name 3"….
    private func freeName(_ name: String, in parent: String?, for id: String) throws -> String {
        var candidate = name
        for number in 2...10_000 {
            guard let holder = try occupant(of: candidate, in: parent), holder.itemID != id else { return candidate }
            candidate = DocumentNames.numbered(name, number)
        }
        throw NimbusError(.conflict, "no free name like \(name) in that folder")
    }

    /// The parent is a live folder, not the item itself or inside it, and not nested too deep.
    private func requireParent(_ parent: String?, for id: String) throws {
        var current = parent
        var depth = 0
        while let next = current {
            guard next != id else { throw NimbusError(.conflict, "an item cannot go inside itself") }
            guard let folder = try item(next), folder.deletedAt == nil, folder.kind == .folder else {
                throw NimbusError(
                    .conflict, depth == 0 ? "the folder \(next) does not exist" : "a folder above \(parent ?? "") is gone")
            }
            depth += 1
            guard depth < DocumentNames.maxDepth else {
                throw NimbusError.badRequest("items nest at most \(DocumentNames.maxDepth) folders deep")
            }
            current = folder.parentID
        }
    }

    /// Every chunk named was uploaded by this user (or is held by one of their versions): a hash alone
    /// never gives access to someone else's bytes.
    private func requireHeld(_ content: DocumentContent?) throws -> [(String, ChunkHolding)] {
        var unnamed: [(String, ChunkHolding)] = []
        for chunk in Set(content?.chunks.map(\.hash) ?? []) {
            guard let held = try ChunkHolding.read(chunk, in: transaction) else {
                throw NimbusError(.chunkMissing, "chunk \(chunk) was not uploaded; upload it, then save again")
            }
            if !held.named { unnamed.append((chunk, held)) }
        }
        return unnamed
    }

    /// Once a version names a chunk, its bytes count through the version, not the upload.
    private func markNamed(_ unnamed: [(String, ChunkHolding)]) throws {
        for (chunk, var held) in unnamed {
            held.named = true
            try held.write(chunk, in: transaction)
        }
    }

    // MARK: - Writes

    /// The later version (by modification date, then content hash, then ID) is current; the other an
    /// unresolved conflict version. The same content saved again (a device that resends after losing
    /// the answer) adds nothing.
    private func keepBoth(_ version: DocumentVersion, in item: inout DocumentItem) {
        guard let current = item.current else {
            item.current = version
            return
        }
        let hash = version.content.contentHash
        guard current.content.contentHash != hash, !item.conflicts.contains(where: { $0.content.contentHash == hash }) else {
            return
        }
        let key = { (version: DocumentVersion) in
            (version.content.modifiedAt, version.content.contentHash, version.versionID)
        }
        if key(version) > key(current) {
            item.conflicts.append(current)
            item.current = version
        } else {
            item.conflicts.append(version)
        }
    }

    /// Stores the item with its name's portability issues, and returns it so.
    @discardableResult private func write(_ item: DocumentItem) throws -> DocumentItem {
        var stored = item
        stored.nameIssues = DocumentNames.portabilityIssues(item.name)
        let bytes = ([stored.current].compactMap { $0 } + stored.conflicts).reduce(0) { $0 + Int($1.content.size) }
        let key = DocumentKeys.item(item.itemID)
        // Forgotten first: a write that fails halfway leaves the item to be read again.
        items[item.itemID] = nil
        try transaction.put(key, payload: try encoder.encode(stored), size: bytes)
        try transaction.index(key, kind: DocumentKeys.itemKind, rows: DocumentKeys.itemRows(stored))
        items[item.itemID] = stored
        return stored
    }

    /// Keeps a version that is no longer current (or a resolved conflict) in the item's history. History
    /// does not count against the quota, as in iCloud Drive.
    private func archive(_ version: DocumentVersion, of item: String) throws {
        var version = version
        version.replacedAt = now
        let key = DocumentKeys.version(item, version.versionID)
        try transaction.put(key, payload: try encoder.encode(version), size: 0)
        try transaction.index(key, kind: DocumentKeys.versionKind, rows: DocumentKeys.versionRows(item: item))
    }
}
