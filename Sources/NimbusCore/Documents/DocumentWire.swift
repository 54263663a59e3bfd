/// What a container's documents look like on the wire (`/documents/1/{container}/{environment}/…`).
package enum DocumentKind: String, Codable, Hashable, Sendable {
    case file
    case folder
    /// A folder synced and versioned as one document (`.pages` bundles).
    case package
}

/// A piece of a file's content, stored once by its SHA-256 however many versions hold it.
package struct DocumentChunk: Codable, Hashable, Sendable {
    /// SHA-256 of the chunk's bytes, 64 lowercase hexadecimal characters.
    package var hash: String
    package var size: Int64

    package init(hash: String, size: Int64) {
        self.hash = hash
        self.size = size
    }
}

/// The content a device saves: the file's chunks in order, the SHA-256 of all its bytes, and when it
/// was last modified on the device.
package struct DocumentContent: Codable, Hashable, Sendable {
    package var contentHash: String
    package var size: Int64
    package var chunks: [DocumentChunk]
    /// Milliseconds since 1970.
    package var modifiedAt: Int64

    package init(contentHash: String, size: Int64, chunks: [DocumentChunk], modifiedAt: Int64) {
        self.contentHash = contentHash
        self.size = size
        self.chunks = chunks
        self.modifiedAt = modifiedAt
    }
}

/// One immutable version of a file: its content, the device that saved it, and the content it was
/// based on.
package struct DocumentVersion: Codable, Hashable, Sendable {
    package var versionID: String
    package var content: DocumentContent
    package var device: String
    package var baseContentHash: String?
    /// When the server received it, milliseconds since 1970.
    package var savedAt: Int64
    /// When it left the item (replaced, or its conflict resolved), for versions in history: they are kept
    /// for the retention period from then.
    package var replacedAt: Int64?

    package init(
        versionID: String, content: DocumentContent, device: String, baseContentHash: String?, savedAt: Int64,
        replacedAt: Int64? = nil
    ) {
        self.versionID = versionID
        self.content = content
        self.device = device
        self.baseContentHash = baseContentHash
        self.savedAt = savedAt
        self.replacedAt = replacedAt
    }
}

/// An item of a container: a stable ID that survives renames and moves, where it is, and for files
/// its current version and the unresolved conflict versions beside it.
package struct DocumentItem: Codable, Hashable, Sendable {
    package var itemID: String
    /// The folder holding it; nil at the container's root.
    package var parentID: String?
    package var name: String
    package var kind: DocumentKind
    package var current: DocumentVersion?
    package var conflicts: [DocumentVersion]
    /// In Recently Deleted since this time (milliseconds since 1970); nil while the item is live.
    package var deletedAt: Int64?
    /// Why the name would not work on some file systems (it is kept as it is).
    package var nameIssues: [String]
    /// When the server first stored it, milliseconds since 1970 (absent for items stored before it was kept).
    package var createdAt: Int64?

    package init(
        itemID: String, parentID: String?, name: String, kind: DocumentKind, current: DocumentVersion? = nil,
        conflicts: [DocumentVersion] = [], deletedAt: Int64? = nil, nameIssues: [String] = [], createdAt: Int64? = nil
    ) {
        self.itemID = itemID
        self.parentID = parentID
        self.name = name
        self.kind = kind
        self.current = current
        self.conflicts = conflicts
        self.deletedAt = deletedAt
        self.nameIssues = nameIssues
        self.createdAt = createdAt
    }
}

/// `POST …/changes`: the items changed since a token (nil: every item).
package struct DocumentChangesRequest: Codable, Sendable {
    package var syncToken: String?
    package var resultsLimit: Int?

    package init(syncToken: String?, resultsLimit: Int? = nil) {
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
    }
}

/// Changed items as they are now (deleted ones with `deletedAt`, or `removed` once purged).
package struct DocumentChangesResponse: Codable, Sendable {
    package var items: [DocumentItem]
    /// Items purged from Recently Deleted (gone for good).
    package var removed: [String]
    package var syncToken: String
    package var moreComing: Bool
    /// Extensions of folders the container treats as file packages.
    package var packageExtensions: [String]?

    package init(
        items: [DocumentItem], removed: [String], syncToken: String, moreComing: Bool, packageExtensions: [String]? = nil
    ) {
        self.packageExtensions = packageExtensions
        self.items = items
        self.removed = removed
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// One change to a container's items. Each operation of a batch applies whole or not at all, on its own.
package struct DocumentOperation: Codable, Hashable, Sendable {
    package enum Kind: String, Codable, Hashable, Sendable {
        /// Create an item, or give it a new version (and place), based on `baseContentHash`.
        case save
        case move
        /// Move to Recently Deleted, unless a file's content is no longer `baseContentHash`.
        case delete
        /// Mark conflict versions resolved (`versionIDs`): they leave the item and stay in its history.
        case resolve
        /// Bring an item back from Recently Deleted, to its place or the one given.
        case restore
        /// Remove an item from Recently Deleted for good.
        case purge
    }

    package var operationType: Kind
    package var itemID: String
    package var parentID: String?
    package var name: String?
    package var kind: DocumentKind?
    package var baseContentHash: String?
    package var content: DocumentContent?
    package var versionIDs: [String]?

    package init(
        _ operationType: Kind, itemID: String, parentID: String? = nil, name: String? = nil, kind: DocumentKind? = nil,
        baseContentHash: String? = nil, content: DocumentContent? = nil, versionIDs: [String]? = nil
    ) {
        self.operationType = operationType
        self.itemID = itemID
        self.parentID = parentID
        self.name = name
        self.kind = kind
        self.baseContentHash = baseContentHash
        self.content = content
        self.versionIDs = versionIDs
    }
}

/// `POST …/modify`.
package struct DocumentModifyRequest: Codable, Sendable {
    package var operations: [DocumentOperation]
    /// The saving device's name, kept with each version.
    package var device: String?

    package init(operations: [DocumentOperation], device: String? = nil) {
        self.operations = operations
        self.device = device
    }
}

/// What became of one operation: the item after it, or the error that left it unapplied.
package struct DocumentResult: Codable, Hashable, Sendable {
    package enum Outcome: String, Codable, Hashable, Sendable {
        /// Applied; for a save, the version is the item's current one.
        case applied
        /// The save's base was not the current version: both are kept, this one as a conflict version.
        case conflict
        /// A new item named like an existing file: it became a version of that item (`item`).
        case merged
        case failed
    }

    package var itemID: String
    package var outcome: Outcome
    package var item: DocumentItem?
    package var serverErrorCode: ErrorCode?
    package var reason: String?

    package init(
        itemID: String, outcome: Outcome, item: DocumentItem? = nil, serverErrorCode: ErrorCode? = nil, reason: String? = nil
    ) {
        self.itemID = itemID
        self.outcome = outcome
        self.item = item
        self.serverErrorCode = serverErrorCode
        self.reason = reason
    }
}

package struct DocumentModifyResponse: Codable, Sendable {
    package var results: [DocumentResult]
    package var syncToken: String

    package init(results: [DocumentResult], syncToken: String) {
        self.results = results
        self.syncToken = syncToken
    }
}

/// `POST …/versions`: an item with its whole history.
package struct DocumentVersionsRequest: Codable, Sendable {
    package var itemID: String
    package init(itemID: String) { self.itemID = itemID }
}

package struct DocumentVersionsResponse: Codable, Sendable {
    package var item: DocumentItem
    /// Earlier versions and resolved conflict versions, newest first.
    package var history: [DocumentVersion]

    package init(item: DocumentItem, history: [DocumentVersion]) {
        self.item = item
        self.history = history
    }
}

/// `GET …/trash`: Recently Deleted.
package struct DocumentTrashResponse: Codable, Sendable {
    package var items: [DocumentItem]
    package init(items: [DocumentItem]) { self.items = items }
}

/// `POST /blobs/1/{container}/{environment}/missing`: which of these chunks the caller must upload.
package struct ChunksMissingRequest: Codable, Sendable {
    package var hashes: [String]
    package init(hashes: [String]) { self.hashes = hashes }
}

package struct ChunksMissingResponse: Codable, Sendable {
    package var missing: [String]
    package init(missing: [String]) { self.missing = missing }
}

/// Chunks of a large file's coming version, stored on the server already, announced by the device uploading
/// them so that the account's other devices download them while the rest still uploads, rather than after
/// the version is saved. A hint, never a promise: the version may change or never be saved, and a device
/// that missed an announcement downloads the chunks once the version arrives.
package struct ChunksAnnouncement: Codable, Hashable, Sendable {
    package var itemID: String
    /// The position in the version's chunk list of the first chunk announced here.
    package var from: Int
    package var chunks: [DocumentChunk]
    /// The announcing device, set by the server: its own push sockets do not get the announcement.
    package var device: String?

    /// Chunks in one announcement: it travels in a push message, and between nodes in one database signal.
    package static let maxChunks = 32

    package init(itemID: String, from: Int, chunks: [DocumentChunk], device: String? = nil) {
        self.itemID = itemID
        self.from = from
        self.chunks = chunks
        self.device = device
    }
}

package struct ChunksFetchRequest: Codable, Sendable {
    package var hashes: [String]
    package init(hashes: [String]) { self.hashes = hashes }
}
