import CFileOps
import Crypto
import Foundation
import NimbusCore
import NimbusKit

/// Keeps one container's folder and the server in agreement: each round reads the server's changes
/// and the disk into the remote and local trees, asks the planner what to do, and does it — the server's
/// side first, in one batch, then the disk's. The planner decides; this type only does I/O, and checks
/// just before touching a file that it is still what the planner saw, so an edit made meanwhile is
/// never overwritten (the next round sees it).
package final class SyncEngine: Sendable {
    private let client: DocumentClient
    private let folder: URL
    private let journal: DeviceJournal
    private let device: String

    /// Operations sent to the server in one request.
    static let batchSize = 200

    package init(client: DocumentClient, folder: URL, journal: DeviceJournal, device: String) {
        self.client = client
        self.folder = folder
        self.journal = journal
        self.device = device
    }

    /// One round; whether it planned anything (run rounds until it plans nothing to converge).
    @discardableResult package func syncOnce() async throws -> Bool {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try await fetchRemote()
        let scan = try LocalScanner(folder: folder).scan(known: try await journal.localFiles())
        try await journal.replaceLocalFiles(scan.files)
        let remoteItems = try await journal.remoteItems()
        var remote = SyncTree()
        for (id, item) in remoteItems { remote[id] = Self.syncItem(item) }
        let plan = SyncPlanner.plan(remote: remote, local: scan.tree, synced: try await journal.syncedTree())
        let (serverSide, diskSide) = (plan.filter(\.isRemote), plan.filter { !$0.isRemote })
        try await runOnServer(serverSide, scan: scan)
        var paths = scan.paths
        for step in diskSide { try await runOnDisk(step, scan: scan, remote: remoteItems, paths: &paths) }
        return !plan.isEmpty
    }

    /// Runs rounds until one plans nothing (or `rounds` ran); whether it converged.
    package func sync(rounds: Int = 20) async throws -> Bool {
        for _ in 0..<rounds where try await !syncOnce() { return true }
        return false
    }

    static func syncItem(_ item: DocumentItem) -> SyncItem {
        SyncItem(
            place: Place(parent: item.parentID.map(ItemID.init), name: item.name),
            kind: ItemKind(rawValue: item.kind.rawValue) ?? .file, content: item.current?.content.contentHash)
    }

    private func fetchRemote() async throws {
        var token = try await journal.syncToken
        while true {
            let page = try await client.changes(since: token)
            try await journal.applyRemote(page)
            token = page.syncToken
            if !page.moreComing { return }
        }
    }

    // MARK: - The server's side

    private func runOnServer(_ steps: [SyncOperation], scan: LocalScanner.Scan) async throws {
        var batch: [(SyncOperation, DocumentOperation)] = []
        for step in steps {
            guard let operation = try await prepare(step, scan: scan) else { continue }
            batch.append((step, operation))
            if batch.count == Self.batchSize {
                try await send(batch)
                batch = []
            }
        }
        if !batch.isEmpty { try await send(batch) }
    }

    /// The wire operation for a step; for a save, once the file's chunks the server lacks are uploaded.
    private func prepare(_ step: SyncOperation, scan: LocalScanner.Scan) async throws -> DocumentOperation? {
        let id = step.item.rawValue
        switch step.action {
        case .upload(let item, let base):
            let kind = DocumentKind(rawValue: item.kind.rawValue) ?? .file
            guard item.kind != .folder else {
                return DocumentOperation(
                    .save, itemID: id, parentID: item.place.parent?.rawValue, name: item.place.name, kind: .folder)
            }
            guard let path = scan.paths[step.item], let content = try await upload(path, expecting: item.content) else {
                return nil
            }
            return DocumentOperation(
                .save, itemID: id, parentID: item.place.parent?.rawValue, name: item.place.name, kind: kind,
                baseContentHash: base, content: content)
        case .moveRemote(let place):
            return DocumentOperation(.move, itemID: id, parentID: place.parent?.rawValue, name: place.name)
        case .deleteRemote(let base):
            return DocumentOperation(.delete, itemID: id, baseContentHash: base)
        default:
            return nil
        }
    }

    /// Uploads the chunks of the file the server does not hold; the file's content, or nil when the
    /// file changed from what the planner saw (the next round sees the new content).
    private func upload(_ path: String, expecting hash: String?) async throws -> DocumentContent? {
        let file = folder.appendingPathComponent(path)
        guard let before = LocalScanner.stat(file.path, path: path) else { return nil }
        var chunks: [DocumentChunk] = []
        let whole = try await FileContent.chunks(of: file) { bytes, chunk in
            chunks.append(DocumentChunk(hash: chunk, size: Int64(bytes.count)))
        }
        guard whole == hash else { return nil }
        let missing = Set(try await client.missing(Array(Set(chunks.map(\.hash)))))
        if !missing.isEmpty {
            var sent = Set<String>()
            let again = try await FileContent.chunks(of: file) { bytes, chunk in
                guard missing.contains(chunk), sent.insert(chunk).inserted else { return }
                try await client.upload(chunk: bytes, hash: chunk)
            }
            guard again == whole else { return nil }
        }
        return DocumentContent(
            contentHash: whole, size: chunks.reduce(0) { $0 + $1.size }, chunks: chunks, modifiedAt: before.modified / 1_000_000)
    }

    private func send(_ batch: [(SyncOperation, DocumentOperation)]) async throws {
        let response = try await client.modify(batch.map(\.1), device: device)
        for ((step, _), result) in zip(batch, response.results) {
            switch result.outcome {
            case .applied, .conflict:
                if let item = result.item { try await journal.setRemote(item) }
                try await journal.setSynced(step.item, step.synced)
            case .merged:
                // The server made this new file a version of the item already at its name.
                guard let item = result.item else { continue }
                try await journal.setRemote(item)
                try await journal.rekey(step.item, as: ItemID(item.itemID))
                try await journal.setSynced(ItemID(item.itemID), step.synced)
            case .failed:
                continue  // the next round plans again from what the server says now
            }
        }
    }

    // MARK: - The disk's side

    private func runOnDisk(
        _ step: SyncOperation, scan: LocalScanner.Scan, remote: [ItemID: DocumentItem], paths: inout [ItemID: String]
    ) async throws {
        let id = step.item
        let current = paths[id]
        switch step.action {
        case .download(let item):
            guard let target = path(of: item.place, in: paths) else { return }
            if let current, !unchanged(current, scan: scan) { return }
            if item.kind == .folder {
                if let current {
                    guard current == target || move(current, to: target) else { return }
                } else {
                    guard mkdir(folder.appendingPathComponent(target).path, 0o755) == 0 else { return }
                }
            } else {
                guard let version = remote[id]?.current, version.content.contentHash == item.content,
                    try await write(version.content, to: target, replacing: current)
                else { return }
            }
            try await placed(id, at: target, content: item.content, paths: &paths)
        case .moveLocal(let place):
            guard let current, let target = path(of: place, in: paths), move(current, to: target) else { return }
            try await placed(id, at: target, content: scan.tree[id]?.content, paths: &paths)
        case .deleteLocal:
            guard let current, unchanged(current, scan: scan) else { return }
            let url = folder.appendingPathComponent(current)
            if scan.tree[id]?.kind == .folder {
                guard rmdir(url.path) == 0 else { return }  // something is still in it
            } else {
                guard unlink(url.path) == 0 else { return }
            }
            paths[id] = nil
            try await journal.removeLocalFile(id)
        case .record:
            break
        case .upload, .moveRemote, .deleteRemote:
            return
        }
        try await journal.setSynced(id, step.synced)
    }

    /// Notes where the engine put an item (and a folder's contents, which moved with it), so the rest
    /// of the round and the next scan know it.
    private func placed(_ id: ItemID, at target: String, content: String?, paths: inout [ItemID: String]) async throws {
        if let old = paths[id], old != target {
            for (other, path) in paths where path.hasPrefix(old + "/") { paths[other] = target + path.dropFirst(old.count) }
        }
        paths[id] = target
        guard let entry = LocalScanner.stat(folder.appendingPathComponent(target).path, path: target) else { return }
        try await journal.setLocalFile(
            LocalFile(id: id, path: target, inode: entry.inode, size: entry.size, modified: entry.modified, content: content))
    }

    /// The relative path of a place whose parent is on the disk.
    private func path(of place: Place, in paths: [ItemID: String]) -> String? {
        guard let parent = place.parent else { return place.name }
        return paths[parent].map { $0 + "/" + place.name }
    }

    /// Whether the file at `path` is still the one the scan read (same inode, size and time).
    private func unchanged(_ path: String, scan: LocalScanner.Scan) -> Bool {
        guard let known = scan.files.first(where: { $0.path == path }),
            let now = LocalScanner.stat(folder.appendingPathComponent(path).path, path: path)
        else { return false }
        return now.inode == known.inode && now.size == known.size && now.modified == known.modified
    }

    /// Renames without ever replacing what is at the target.
    private func move(_ path: String, to target: String) -> Bool {
        nimbus_rename_noreplace(folder.appendingPathComponent(path).path, folder.appendingPathComponent(target).path) == 0
    }

    /// Writes a version through a temporary file, synced, then renamed into place: no reader ever sees
    /// half a file. It replaces only `replacing` (the item's own file, checked unchanged), and removes
    /// that file when the item's place changed.
    private func write(_ content: DocumentContent, to target: String, replacing current: String?) async throws -> Bool {
        let targetURL = folder.appendingPathComponent(target)
        let temporary = targetURL.deletingLastPathComponent().appendingPathComponent(
            LocalScanner.temporaryPrefix + UUIDString.random())
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o644])
        else { return false }
        var hasher = SHA256()
        do {
            let handle = try FileHandle(forWritingTo: temporary)
            defer { try? handle.close() }
            for chunk in content.chunks {
                let bytes = try await client.download(chunk: chunk.hash)
                guard FileContent.hex(SHA256.hash(data: bytes)) == chunk.hash else {
                    throw NimbusError(.internalError, "chunk \(chunk.hash) arrived with other bytes")
                }
                hasher.update(data: bytes)
                try handle.write(contentsOf: bytes)
            }
            guard FileContent.hex(hasher.finalize()) == content.contentHash else {
                throw NimbusError(.internalError, "the downloaded file does not hash to its version's content hash")
            }
            try handle.synchronize()
        } catch {
            unlink(temporary.path)
            throw error
        }
        let placed: Bool
        if current == target {
            placed = rename(temporary.path, targetURL.path) == 0
        } else {
            placed = nimbus_rename_noreplace(temporary.path, targetURL.path) == 0
            if placed, let current { unlink(folder.appendingPathComponent(current).path) }
        }
        if !placed { unlink(temporary.path) }
        return placed
    }
}

extension SyncOperation {
    var isRemote: Bool {
        switch action {
        case .upload, .moveRemote, .deleteRemote: true
        case .download, .moveLocal, .deleteLocal, .record: false
        }
    }
}
