import Foundation
import NimbusCore
import Synchronization

// The daemon's control socket speaks these: one JSON request a line, one answer a line (a `watch` keeps
// answering, one update a line, until the app hangs up). The CLI, the daemon and apps share them.

/// Where an item stands, and in words why it is not synced yet.
package struct ItemStatus: Codable, Sendable, Equatable {
    package enum State: String, Codable, Sendable {
        case synced, notDownloaded, queued, uploading, downloading, waitingForNetwork, conflict, overQuota, refused,
            nameInvalid, excluded, notFound
    }

    /// Relative to the container's folder.
    package var path: String
    package var state: State
    package var reason: String
    package var percentDone: Double?
    /// Systems on which the item's name is not valid (it syncs, but would not on those).
    package var nameIssues: [String]

    package init(path: String, state: State, reason: String, percentDone: Double? = nil, nameIssues: [String] = []) {
        self.path = path
        self.state = state
        self.reason = reason
        self.percentDone = percentDone
        self.nameIssues = nameIssues
    }
}

/// The whole folder: what is left to do and what stopped the last round.
package struct FolderStatus: Codable, Sendable, Equatable {
    package var folder: String
    package var container: String
    package var pending: Int
    package var refused: Int
    package var conflicts: Int
    /// The last round's failure in words (nil: it succeeded).
    package var problem: String?
    package var offline: Bool
    /// Milliseconds since 1970 of the last round that succeeded.
    package var lastSyncedAt: Int64?

    package init(
        folder: String, container: String, pending: Int, refused: Int, conflicts: Int, problem: String?, offline: Bool,
        lastSyncedAt: Int64?
    ) {
        self.folder = folder
        self.container = container
        self.pending = pending
        self.refused = refused
        self.conflicts = conflicts
        self.problem = problem
        self.offline = offline
        self.lastSyncedAt = lastSyncedAt
    }
}

/// A request on the control socket: one JSON object on one line.
package struct ControlRequest: Codable, Sendable {
    package enum Command: String, Codable, Sendable {
        case status, download, evict
        /// The items matching `query`, once.
        case query
        /// The items matching `query` (unless it asks not to gather), then their changes as they happen.
        case watch
        /// The item's current, conflict and history versions.
        case versions
        /// Marks the item's conflict versions `versionIDs` resolved.
        case resolve
        /// Writes version `versionIDs[0]` of the item into a new file beside the container's items.
        case fetchVersion
        /// The item's file was written by a coordinated writer: sync soon.
        case touched
    }

    package var command: Command
    /// Absolute, or relative to the container's folder; nil asks about the folder as a whole.
    package var path: String?
    package var query: MetadataQuerySpec?
    package var versionIDs: [String]?

    package init(command: Command, path: String? = nil, query: MetadataQuerySpec? = nil, versionIDs: [String]? = nil) {
        self.command = command
        self.path = path
        self.query = query
        self.versionIDs = versionIDs
    }
}

package struct ControlResponse: Codable, Sendable {
    /// Each container folder of the root, when the request named no path.
    package var folders: [FolderStatus]?
    package var item: ItemStatus?
    /// A query's or a watch's matching items. On the socket they follow the answer's line, one `row` a line
    /// (`itemRows` says how many), not inside it.
    package var items: [MetadataItem]?
    package var itemRows: Int?
    /// The rows' length in bytes, newlines included, so that the reader makes room for them once.
    package var itemBytes: Int?
    /// A watch's changes, after its first answer.
    package var update: MetadataUpdate?
    package var versions: [VersionInfo]?
    /// Where a fetched version was written (absolute).
    package var file: String?
    package var error: String?
    /// The error's stable code, when the request failed.
    package var code: ErrorCode?

    package init(
        folders: [FolderStatus]? = nil, item: ItemStatus? = nil, items: [MetadataItem]? = nil, update: MetadataUpdate? = nil,
        versions: [VersionInfo]? = nil, file: String? = nil, error: String? = nil, code: ErrorCode? = nil
    ) {
        self.itemRows = nil
        self.itemBytes = nil
        self.folders = folders
        self.item = item
        self.items = items
        self.update = update
        self.versions = versions
        self.file = file
        self.error = error
        self.code = code
    }

    package init(_ error: NimbusError) { self.init(error: error.reason, code: error.code) }

    /// The answer as it goes on the socket, its line and then its items' rows, in the pieces it is made of, to be
    /// sent one after another: joined, 100,000 rows were two more copies of several megabytes on the way.
    package func pieces() throws -> [[UInt8]] {
        let items = items ?? []
        // In two halves at once: 100,000 rows are a good part of a large query's time.
        let parts = Self.halves(items.count) { range in
            var part: [UInt8] = []
            for item in items[range] {
                item.appendRow(to: &part)
                part.append(0x0A)
            }
            return part
        }
        var head = self
        head.items = nil
        if self.items != nil { (head.itemRows, head.itemBytes) = (items.count, parts.reduce(0) { $0 + $1.count }) }
        var line = [UInt8](try JSONEncoder().encode(head))
        line.append(0x0A)
        return [line] + parts
    }

    /// The next answer from `lines` (its line, then its items' rows), nil when the connection ends first.
    package static func read(from lines: LineReader) throws -> ControlResponse? {
        guard let line = lines.next() else { return nil }
        var response = try JSONDecoder().decode(ControlResponse.self, from: line)
        if let count = response.itemRows {
            // In one buffer: an array a row was 100,000 more blocks to make and copy into.
            guard let (bytes, rows) = lines.nextLines(count, expectedBytes: response.itemBytes ?? 0) else {
                throw NimbusError(.internalError, "the daemon's answer ended inside its items")
            }
            var parts = halves(count) { range in rows[range].compactMap { MetadataItem(row: bytes[$0]) } }
            // The first half taken as it is and the second appended: not both copied into a third array.
            var items = parts.removeFirst()
            if let second = parts.popLast() { items += second }
            guard items.count == count else { throw NimbusError(.internalError, "the daemon's answer had malformed items") }
            (response.items, response.itemRows, response.itemBytes) = (items, nil, nil)
        }
        return response
    }

    /// `body` over the two halves of `0..<count` at once (the second on a thread of its own), in order. It
    /// waits for that thread, so it runs only off Swift's cooperative threads: on the control socket's and
    /// `DaemonConnection`'s threads, and the device's (`DeviceExecutor`). Not `DispatchQueue.concurrentPerform`:
    /// called from Dispatch's and Swift's pooled threads, it corrupted the heap now and then (the suite crashed
    /// in malloc about one run in two).
    static func halves<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Range<Int>) -> T) -> [T] {
        guard count >= 1000 else { return [body(0..<count)] }
        let second = SecondHalf<T>()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let part = body(count / 2..<count)
            second.result.withLock { $0 = part }
            done.signal()
        }
        let first = body(0..<count / 2)
        done.wait()
        return [first] + (second.result.withLock { $0 }.map { [$0] } ?? [])
    }

    /// The answer, or the error it carries.
    package func get() throws -> ControlResponse {
        guard let error else { return self }
        throw NimbusError(code ?? .internalError, error)
    }
}

/// What a metadata query asks of the daemon.
package struct MetadataQuerySpec: Codable, Sendable, Hashable {
    package var scopes: [MetadataQuery.Scope]
    package var predicate: MetadataPredicate
    /// Whether the watch's first answer lists the matching items (a presenter's watch needs only changes).
    package var gather: Bool

    package init(scopes: [MetadataQuery.Scope], predicate: MetadataPredicate, gather: Bool = true) {
        self.scopes = scopes
        self.predicate = predicate
        self.gather = gather
    }
}

/// Items that came to match, changed, or stopped matching (moved away, deleted), in the order they did.
package struct MetadataUpdate: Codable, Sendable, Hashable {
    package var added: [MetadataItem]
    package var changed: [MetadataItem]
    /// As they were last sent.
    package var removed: [MetadataItem]
    /// Where changed items that moved were before (by item ID).
    package var previousPaths: [String: String]

    package init(
        added: [MetadataItem] = [], changed: [MetadataItem] = [], removed: [MetadataItem] = [],
        previousPaths: [String: String] = [:]
    ) {
        self.added = added
        self.changed = changed
        self.removed = removed
        self.previousPaths = previousPaths
    }

    package var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }
}

/// One version of an item as the daemon describes it to `FileVersion`.
package struct VersionInfo: Codable, Sendable, Hashable {
    package enum Role: String, Codable, Sendable { case current, conflict, history }
    package var versionID: String
    package var role: Role
    package var size: Int64
    /// Milliseconds since 1970: when the saving device last modified the content.
    package var modifiedAt: Int64
    /// Milliseconds since 1970: when the server received it.
    package var savedAt: Int64
    package var device: String

    package init(versionID: String, role: Role, size: Int64, modifiedAt: Int64, savedAt: Int64, device: String) {
        self.versionID = versionID
        self.role = role
        self.size = size
        self.modifiedAt = modifiedAt
        self.savedAt = savedAt
        self.device = device
    }
}

/// The second half's result, handed from its thread.
private final class SecondHalf<T: Sendable>: Sendable {
    let result = Mutex<T?>(nil)
}
