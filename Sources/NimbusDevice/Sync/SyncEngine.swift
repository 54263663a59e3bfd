import CFileOps
import Crypto
import Foundation
import NIOCore
import NimbusCore
import NimbusKit
import Synchronization

/// Keeps one container's folder and the server in agreement: each round reads the server's changes
/// and the disk into the remote and local trees, asks the planner what to do, and does it — the server's
/// side first, in one batch, then the disk's. The planner decides; this type only does I/O, and checks
/// just before touching a file that it is still what the planner saw, so an edit made meanwhile is
/// never overwritten (the next round sees it).
package final class SyncEngine: Sendable {
    package let client: DocumentClient
    package let folder: URL
    package let journal: DeviceJournal
    private let device: String
    /// New files from the server arrive as placeholders, downloaded when asked for (`download(_:)`).
    private let downloadsOnDemand: Bool
    /// Rounds, evictions and requested downloads run one at a time.
    private let turns = AsyncLock()
    /// What the engine is doing and what stopped it, for the control socket.
    package let activity = SyncActivity()
    /// The files it renames into place, for the daemon's folder watcher to pass over (`OwnChanges`).
    package let ownChanges = OwnChanges()
    /// Large files another device is still uploading, downloaded meanwhile; nil while new files arrive as
    /// placeholders.
    private let incoming: IncomingDownloads?
    /// The device root whose file coordination locks (`CoordinationLock`) the engine takes, so an app's
    /// coordinated read never sees a file being placed and its coordinated write is never overwritten: the
    /// folder's root when it is `ROOT/Mobile Documents/<container>`.
    let coordinationRoot: URL?

    /// Operations sent to the server in one request.
    static let batchSize = 200
    /// Chunk uploads and downloads in flight at once.
    static let uploadsInFlight = 4
    /// A large file's chunk uploads and downloads in flight at once. Each waits mostly on the server's syncs,
    /// not on the link: 4 → 8 took 256 MB up from 1.43 to 1.04 s and down from 0.98 to 0.72 s on loopback;
    /// 8 → 16 took a 256 MB download A → B beside 11,000 files (its chunks already on the server) from
    /// 2.66–3.28 s to 2.55–2.87 s in alternating runs, for about 10 MB more at each device's peak; with the
    /// upload as well the runs showed no difference.
    static let largeFileChunksInFlight = 16
    /// How far a large file's reading runs ahead of its uploads, in bytes (`ReadAhead`): enough to cut and hash
    /// through a wait on the server's disk (0.4 s of a 256 MB upload, at the chunker's ~370 MB/s), and far less
    /// than the page cache its chunks are read again from.
    static let largeFileReadAhead = 256 << 20
    /// Steps of the disk's side downloaded and done together.
    static let diskSlice = 500
    /// Chunks of a large file asked about together while it is read once.
    static let chunksPerQuestion = 8
    /// Chunk hashes in one `missing` question (the server's limit).
    static let hashesPerQuestion = 10_000
    /// Readers that confirm a large file read while it grew (`LargeUpload`), each through its own stretch of it: by
    /// then the uploads are done or nearly, so one reader left a core idle while everyone waited on it (~0.3 s of a
    /// 256 MB file).
    static let confirmingReaders = 2
    /// A large file's stored chunks are announced to the other devices once this many more are stored
    /// (and, once the file is read to its end, each as it is stored).
    static let chunksPerAnnouncement = 8
    /// The largest chunk buffer a large file's transfer fills again. A buffer keeps the pages of the largest chunk
    /// it held (its capacity a power of two): filled again, the buffers of a 256 MB transfer held ~20 MB more at
    /// its peak (A 86–88 → 105–112 MB, B 67–73 → 89–92 MB) for ~0.25 s less CPU on each device. Most chunks are
    /// 1–2 MB (`ContentDefinedChunker`); the buffer of a larger one is let go, so a file of large chunks keeps no
    /// more.
    static let reusedBufferCapacity = 2 << 20

    package init(client: DocumentClient, folder: URL, journal: DeviceJournal, device: String, downloadsOnDemand: Bool = false) {
        self.downloadsOnDemand = downloadsOnDemand
        self.client = client
        self.folder = folder
        self.journal = journal
        self.device = device
        incoming = downloadsOnDemand ? nil : IncomingDownloads(folder: folder, client: client, journal: journal)
        let parent = folder.standardizedFileURL.deletingLastPathComponent()
        coordinationRoot = parent.lastPathComponent == "Mobile Documents" ? parent.deletingLastPathComponent() : nil
    }

    /// Runs `body` holding the coordination locks of `paths` (relative; a placeholder stands for its file).
    func coordinated<T>(_ paths: [String], exclusive: Bool, _ body: () async throws -> T) async throws -> T {
        guard let coordinationRoot, !paths.isEmpty else { return try await body() }
        let base = folder.standardizedFileURL.path + "/"
        let lock = try await CoordinationLock.acquire(
            root: coordinationRoot,
            accesses: paths.map {
                (path: base + (Placeholder.isPlaceholder(path: $0) ? Placeholder.realPath(of: $0) : $0), exclusive: exclusive)
            })
        defer { withExtendedLifetime(lock) {} }
        return try await body()
    }

    /// Another device announced stored chunks of a large file it is uploading: they are downloaded now, for
    /// the round that downloads the version to take over. Call in the order announcements arrive.
    package func announced(_ announcement: ChunksAnnouncement) async {
        await incoming?.announced(announcement)
    }

    /// One round; whether it planned anything (run rounds until it plans nothing to converge).
    @discardableResult package func syncOnce() async throws -> Bool {
        try await exclusively {
            do {
                let planned = try await round()
                await activity.roundEnded(nil)
                return planned
            } catch {
                await activity.roundEnded(error as? NimbusError ?? NimbusError(.internalError, "\(error)"))
                throw error
            }
        }
    }

    /// Runs `body` when no round, eviction or requested download runs, on the device's threads: it blocks them.
    func exclusively<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await DeviceExecutor.run {
            await turns.lock()
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            await turns.unlock()
            return try result.get()
        }
    }

    private func round() async throws -> Bool {
        assert(DeviceExecutor.isCurrent, "a round blocks its thread: it runs on the device's (DeviceExecutor)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        removeTemporaryFiles()
        // This round's scan sees what earlier placements did: any announcement not met yet is moot.
        ownChanges.forgetAll()
        // Offline, the disk is still scanned and planned against the server's last known tree, so status and
        // apps' queries show what waits (and why) before the round gives up.
        var offline: NimbusError?
        do {
            try await fetchRemote()
        } catch let error as NimbusError where error.code == .networkUnavailable {
            offline = error
        }
        // The synced tree is read after the scan, whose own tables are at their largest during it.
        let scan = try await scanDisk()
        let (remote, synced) = try await journal.roundTrees()
        let plan = SyncPlanner.plan(remote: remote, local: scan.tree, synced: synced)
        await activity.planned(plan)
        if let offline { throw offline }
        // The server refusing this device's batch (its storage is full, say) must not stop what comes the
        // other way: the disk's side runs, and the refusal is reported after it.
        var refused: (any Error)?
        do {
            try await runOnServer(plan, scan: scan)
        } catch let error as NimbusError where error.code != .networkUnavailable {
            refused = error
        }
        // In slices, so that files appear as they arrive and memory holds one slice's downloads.
        var paths = scan.files.mapValues(\.path)
        try await Self.forEachSlice(of: plan, size: Self.diskSlice, where: { !$0.isRemote }) { slice in
            let downloads = slice.filter { if case .download = $0.action { true } else { false } }
            let items = try await journal.remoteItems(downloads.map(\.item))
            let fetched = try await fetch(downloads.filter { !staysEvicted($0, scan: scan) }, remote: items, scan: scan)
            defer { for file in fetched.values { unlink(file.path) } }
            for step in slice { try await runOnDisk(step, scan: scan, fetched: fetched, remote: items, paths: &paths) }
        }
        if let refused { throw refused }
        return !plan.isEmpty
    }

    /// Calls `body` with the steps of `plan` that `isIncluded` takes, in order, `size` at a time. Each side of a round
    /// reads the plan so: a copy of either side held its steps twice (~190 bytes a step, and a round can plan one for
    /// every item).
    private static func forEachSlice(
        of plan: [SyncOperation], size: Int, where isIncluded: (SyncOperation) -> Bool,
        _ body: ([SyncOperation]) async throws -> Void
    ) async throws {
        var slice: [SyncOperation] = []
        slice.reserveCapacity(size)
        for step in plan where isIncluded(step) {
            slice.append(step)
            guard slice.count == size else { continue }
            try await body(slice)
            slice.removeAll(keepingCapacity: true)
        }
        if !slice.isEmpty { try await body(slice) }
    }

    /// The disk as it is now, recorded in the journal. What the journal knew is let go on return: at 100,000
    /// files it is tens of megabytes the rest of the round does not need.
    private func scanDisk() async throws -> LocalScanner.Scan {
        let scanner = LocalScanner(folder: folder, packageExtensions: try await journal.packageExtensions)
        let known = try await journal.localFiles()
        var scan = try scanner.scan(known: known)
        if try await renameCollidingNames(scan) { scan = try scanner.scan(known: known) }
        try await journal.updateLocalFiles(from: known, to: scan)
        return scan
    }

    /// Names that differ only by case or Unicode normalisation are one name on the server (and on Apple's
    /// and Windows' disks), but two on this one: all but one of such items are renamed here, as Finder
    /// names copies ("notes 2.txt"), before anything is uploaded. The one kept is the item the server
    /// already knows, else the first by name. Whether it renamed anything.
    private func renameCollidingNames(_ scan: LocalScanner.Scan) async throws -> Bool {
        // Names hashed first, and grouped exactly only where two hashes meet: a table of every item by its key (a
        // string each) was 17 MB at 100,000 files, for names that almost never collide.
        func key(_ item: SyncItem) -> String {
            "\(item.place.parent?.rawValue ?? "")/\(DocumentNames.collisionKey(item.place.name))"
        }
        var seen = Set<Int>(minimumCapacity: scan.tree.items.count)
        var suspects = Set<Int>()
        for item in scan.tree.items.values {
            let hash = key(item).hashValue
            if !seen.insert(hash).inserted { suspects.insert(hash) }
        }
        guard !suspects.isEmpty else { return false }
        var groups: [String: [ItemID]] = [:]
        for (id, item) in scan.tree.items where suspects.contains(key(item).hashValue) {
            groups[key(item), default: []].append(id)
        }
        let colliding = groups.values.filter { $0.count > 1 }
        let agreed = try await journal.syncedIDs(among: colliding.flatMap { $0 })
        var renamed = false
        for ids in colliding {
            let ordered = ids.sorted { a, b in
                let (knownA, knownB) = (agreed.contains(a), agreed.contains(b))
                if knownA != knownB { return knownA }
                return (scan.tree[a]?.place.name ?? "", a) < (scan.tree[b]?.place.name ?? "", b)
            }
            for id in ordered.dropFirst() {
                guard let item = scan.tree[id], let path = scan.files[id]?.path else { continue }
                let siblings = Set(
                    scan.tree.items.values.filter { $0.place.parent == item.place.parent }.map {
                        DocumentNames.collisionKey($0.place.name)
                    })
                guard
                    let free = (2...1000).lazy.map({ DocumentNames.numbered(item.place.name, $0) }).first(where: {
                        !siblings.contains(DocumentNames.collisionKey($0))
                    })
                else { continue }
                var target = LocalScanner.split(path).folder.isEmpty ? free : LocalScanner.split(path).folder + "/" + free
                if Placeholder.isPlaceholder(path: path) { target = Placeholder.path(for: target) }
                if move(path, to: target) { renamed = true }
            }
        }
        return renamed
    }

    /// Runs rounds until one plans nothing (or `rounds` ran); whether it converged. `beforeEachRound` runs
    /// before each round's scan (the daemon watches the folders the round before made, so that scan sees
    /// whatever changed in them before their watch).
    package func sync(rounds: Int = 20, beforeEachRound: () -> Void = {}) async throws -> Bool {
        for _ in 0..<rounds {
            beforeEachRound()
            if try await !syncOnce() { return true }
        }
        return false
    }

    /// The zone sequence the journal has fetched the server's changes up to, read from its token; nil when
    /// none was fetched or the token is not one this release reads.
    package var fetchedSequence: Int64? {
        get async {
            guard let token = try? await journal.syncToken else { return nil }
            return (try? ChangeToken(encoded: token))?.sequence
        }
    }

    private func fetchRemote() async throws {
        var token = try await journal.syncToken
        while true {
            let page: DocumentChangesResponse
            do {
                page = try await client.changes(since: token)
            } catch let error as NimbusError where error.code == .changeTokenExpired && token != nil {
                try await journal.forgetServer()
                token = nil
                continue
            }
            try await journal.applyRemote(page)
            token = page.syncToken
            if !page.moreComing { return try await journal.finishResync() }
        }
    }

    // MARK: - The server's side

    /// Sends the server's side of a plan in batches: for each batch, every file's chunks are read and
    /// hashed, the server is asked once which it lacks, those are uploaded a few at a time, and one
    /// request commits the batch's operations.
    private func runOnServer(_ plan: [SyncOperation], scan: LocalScanner.Scan) async throws {
        var rekeyed: [ItemID: ItemID] = [:]
        try await Self.forEachSlice(of: plan, size: Self.batchSize, where: \.isRemote) { batch in
            var contents: [ItemID: (path: String, content: DocumentContent)] = [:]
            var sent = Set<ItemID>()
            var packed: [URL] = []
            defer { for archive in packed { unlink(archive.path) } }
            for step in batch {
                guard case .upload(let item, _) = step.action, item.kind != .folder, var path = scan.files[step.item]?.path
                else { continue }
                if item.kind == .package {
                    // A package travels as its stream (`PackageArchive`), written to a temporary file first.
                    guard let archive = try? pack(path, expecting: item.content) else { continue }
                    packed.append(archive)
                    path = archive.lastPathComponent
                }
                // A file of several chunks is read once, asking about and sending its chunks as it goes;
                // small files are read first and asked about together.
                let size = LocalScanner.stat(folder.appendingPathComponent(path).path, path: path)?.size ?? 0
                let large = size > ContentDefinedChunker.standard.maximumSize
                // A package's stream is this round's own file; a file is read only while it is what the scan saw.
                guard
                    let content = try await large
                        ? send(step.item, at: path, expecting: item.content, unchangedSince: item.kind == .package ? nil : scan)
                        : read(path, expecting: item.content)
                else { continue }
                contents[step.item] = (path, content)
                if large { sent.insert(step.item) }
            }
            let hashes = Array(Set(contents.filter { !sent.contains($0.key) }.values.flatMap { $0.content.chunks.map(\.hash) }))
            let missing = Set(try await self.missing(hashes))
            let unchanged = try await uploadBundled(
                batch.compactMap { step in
                    contents[step.item].flatMap { sent.contains(step.item) ? nil : (step.item, $0.path, $0.content) }
                }, missing: missing)
            var sendable: [(SyncOperation, DocumentOperation)] = []
            for step in batch {
                if case .upload(let item, _) = step.action, item.kind != .folder {
                    guard let (_, content) = contents[step.item], sent.contains(step.item) || unchanged.contains(step.item),
                        let operation = operation(step, content: content)
                    else { continue }
                    sendable.append((step.uploading(content: content.contentHash), operation))
                } else if let operation = operation(step, content: nil) {
                    sendable.append((step, operation))
                }
            }
            for index in sendable.indices {
                if let parent = sendable[index].1.parentID, let merged = rekeyed[ItemID(parent)] {
                    sendable[index].1.parentID = merged.rawValue
                }
            }
            if !sendable.isEmpty {
                rekeyed.merge(try await send(sendable, rekeyed: rekeyed, scan: scan)) { _, new in new }
            }
        }
    }

    /// The package at `path` as its stream in a temporary file at the folder's root, if it still hashes to
    /// `expected`.
    private func pack(_ path: String, expecting expected: String?) throws -> URL? {
        let (archive, handle) = try createTemporary()
        let hash = try? PackageArchive.pack(folder.appendingPathComponent(path), into: handle)
        try? handle.close()
        guard hash == expected else {
            unlink(archive.path)
            return nil
        }
        return archive
    }

    /// The wire operation for a step of the server's side.
    private func operation(_ step: SyncOperation, content: DocumentContent?) -> DocumentOperation? {
        let id = step.item.rawValue
        switch step.action {
        case .upload(let item, let base):
            return DocumentOperation(
                .save, itemID: id, parentID: item.place.parent?.rawValue, name: item.place.name,
                kind: DocumentKind(rawValue: item.kind.rawValue) ?? .file, baseContentHash: item.kind == .folder ? nil : base,
                content: content)
        case .moveRemote(let place):
            return DocumentOperation(.move, itemID: id, parentID: place.parent?.rawValue, name: place.name)
        case .deleteRemote(let base):
            return DocumentOperation(.delete, itemID: id, baseContentHash: base)
        default:
            return nil
        }
    }

    /// The file's chunks and hash, or nil when it is not the content the planner saw (the next round
    /// sees the new content).
    private func read(_ path: String, expecting hash: String?) async throws -> DocumentContent? {
        let file = folder.appendingPathComponent(path)
        guard let before = LocalScanner.stat(file.path, path: path) else { return nil }
        var chunks: [DocumentChunk] = []
        let whole = try await coordinated([path], exclusive: false) {
            try await FileContent.chunks(of: file) { bytes, chunk in
                chunks.append(DocumentChunk(hash: chunk, size: Int64(bytes.count)))
            }
        }
        guard whole == hash else { return nil }
        return DocumentContent(
            contentHash: whole, size: chunks.reduce(0) { $0 + $1.size }, chunks: chunks, modifiedAt: before.modified / 1_000_000)
    }

    /// Which of the chunks the server lacks, asked in questions of the size it takes.
    private func missing(_ hashes: [String]) async throws -> [String] {
        var missing: [String] = []
        for start in stride(from: 0, to: hashes.count, by: Self.hashesPerQuestion) {
            missing += try await client.missing(Array(hashes[start..<min(hashes.count, start + Self.hashesPerQuestion)]))
        }
        return missing
    }

    /// Stores a large file's chunks on the server as it reads the file once, announcing them to the other devices
    /// as they are stored (`LargeUpload`). The file's content, or nil when it is not what the planner saw.
    ///
    /// With `unchangedSince`, the file must still be the one the scan saw, or that file grown: checked before
    /// each question, so a file changed otherwise is left for the next round after a few chunks. A file still
    /// being written (its creation woke the round) is read and sent as it grows, to its end, and the other
    /// devices download it meanwhile; confirmed once read (`LargeUpload.Stored.confirmed`), this round saves it
    /// as it is then, else the next round reads it again.
    private func send(
        _ id: ItemID, at path: String, expecting hash: String?,
        unchangedSince scan: LocalScanner.Scan?
    ) async throws -> DocumentContent? {
        let file = folder.appendingPathComponent(path)
        @Sendable func stillScanned() -> Bool { scan.map { unchanged(id, at: path, scan: $0, orGrown: true) } ?? true }
        guard stillScanned(), let before = LocalScanner.stat(file.path, path: path) else { return nil }
        await activity.started(id, bytes: before.size)
        // No coordination lock here: it would be held across the network for the whole upload. What is sent
        // is checked against the hash the planner saw, read under the lock (`read`) or by the scan.
        let stored: LargeUpload.Stored
        do {
            let upload = try LargeUpload(id, file: file, client: client, activity: activity, stillPlanned: stillScanned)
            stored = try await upload.run(expecting: hash)
        } catch is LargeUpload.ChangedWhileSent {
            return nil
        }
        let content = DocumentContent(
            contentHash: stored.hash, size: stored.chunks.reduce(0) { $0 + $1.size }, chunks: stored.chunks,
            modifiedAt: (stored.confirmed ?? before).modified / 1_000_000)
        guard let confirmed = stored.confirmed else { return stored.hash == hash ? content : nil }
        // Confirmed as the file is now (read to its end while it grew, or scanned while it was still written): saved
        // by this round, and the journal holds the file as it is, so the next scan does not read it again.
        guard let scanned = scan?.file(id) else { return stored.hash == hash ? content : nil }
        var local = scanned
        (local.inode, local.size, local.modified, local.content) = (
            confirmed.inode, confirmed.size, confirmed.modified, stored.hash
        )
        if local != scanned { try await journal.setLocalFile(local) }
        return content
    }

    /// Uploads the files' chunks that are in `missing`, many to a request (`ChunkBundle`) and a few
    /// requests in flight, reading each file once more; the files still holding the content read before
    /// (the others are saved in a later round).
    private func uploadBundled(_ files: [(ItemID, path: String, content: DocumentContent)], missing: Set<String>)
        async throws -> Set<ItemID>
    {
        let client = client
        var wanted = missing
        var unchanged = Set<ItemID>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            var bundle: [ChunkBundle.Chunk] = []
            var bytes = 0
            var inFlight = 0
            func flush() async throws {
                guard !bundle.isEmpty else { return }
                if inFlight == Self.uploadsInFlight {
                    try await group.next()
                    inFlight -= 1
                }
                let sending = bundle
                group.addTask { try await client.upload(bundle: sending) }
                inFlight += 1
                (bundle, bytes) = ([], 0)
            }
            for (id, path, content) in files {
                guard content.chunks.contains(where: { wanted.contains($0.hash) }) else {
                    unchanged.insert(id)
                    continue
                }
                // Unlocked (sending a bundle may wait on the network mid-file): the hash read under the lock in
                // `read` decides whether what was read now is that content.
                let whole = try await FileContent.chunks(of: folder.appendingPathComponent(path)) { data, hash in
                    guard wanted.remove(hash) != nil else { return }
                    if bytes + data.count > ChunkBundle.maxBytes || bundle.count == ChunkBundle.maxChunks { try await flush() }
                    bundle.append(ChunkBundle.Chunk(hash: hash, bytes: Data(data)))
                    bytes += data.count
                }
                if whole == content.contentHash { unchanged.insert(id) }
            }
            try await flush()
            try await group.waitForAll()
        }
        return unchanged
    }

    /// Commits a batch; the new folders the server merged into existing ones (this device's ID → theirs).
    private func send(
        _ batch: [(SyncOperation, DocumentOperation)], rekeyed earlier: [ItemID: ItemID], scan: LocalScanner.Scan
    ) async throws -> [ItemID: ItemID] {
        let response = try await client.modify(batch.map(\.1), device: device)
        var outcomes: [(local: ItemID, remote: DocumentItem?, synced: SyncItem?)] = []
        var rekeyed = earlier
        var renamed = Set<ItemID>()
        for ((step, _), result) in zip(batch, response.results) where result.outcome == .merged {
            guard let item = result.item, item.kind == .folder else { continue }
            let existing = ItemID(item.itemID)
            // What this batch put in the folder, the server put in the existing one.
            rekeyed[step.item] = existing
            // When this device holds that folder elsewhere already, this one is renamed as Finder names copies and
            // uploaded under that name next round (what it holds then moves back into it); else it becomes that
            // folder.
            guard scan.files[existing] != nil, let path = scan.files[step.item]?.path else { continue }
            let (parent, name) = LocalScanner.split(path)
            let free = (2...1000).lazy.map { DocumentNames.numbered(name, $0) }.first { candidate in
                !FileManager.default.fileExists(
                    atPath: self.folder.appendingPathComponent(parent).appendingPathComponent(candidate).path)
            }
            guard let free else { continue }
            let target = parent.isEmpty ? free : parent + "/" + free
            if try await coordinated([path, target], exclusive: true, { move(path, to: target) }) {
                renamed.insert(step.item)
            }
        }
        for ((step, _), result) in zip(batch, response.results) where !renamed.contains(step.item) {
            switch result.outcome {
            case .applied, .conflict, .merged:
                // A merged item is now the one the server had at its name (the same new name on two
                // devices): the local file or folder is that item, and what this batch put in a merged
                // folder is in that item.
                var synced = step.synced
                if let parent = synced?.place.parent, let merged = rekeyed[parent] { synced?.place.parent = merged }
                outcomes.append((step.item, result.item, synced))
                await activity.finished(step.item)
            case .failed:
                // The next round plans again from what the server says now; until then, status says why.
                await activity.refused(
                    step.item, NimbusError(result.serverErrorCode ?? .internalError, result.reason ?? "the server refused it"))
            }
        }
        try await journal.recordCommitted(outcomes)
        return rekeyed.filter { earlier[$0.key] == nil }
    }

    // MARK: - The disk's side

    /// Downloads the files of the plan's downloads into temporary files at the folder's root (same file
    /// system, skipped by scans), checked against their versions' hashes and synced together. Small files
    /// come many to a request (`ChunkBundle`), large ones chunk by chunk; a few requests are in flight.
    private func fetch(_ steps: [SyncOperation], remote: [ItemID: DocumentItem], scan: LocalScanner.Scan) async throws
        -> [ItemID: URL]
    {
        let wanted = steps.compactMap { step -> (ItemID, DocumentContent)? in
            guard case .download(let item) = step.action, item.kind != .folder,
                let version = remote[step.item]?.current, version.content.contentHash == item.content
            else { return nil }
            return (step.item, version.content)
        }
        var fetched: [ItemID: URL] = [:]
        do {
            try await withThrowingTaskGroup(of: [(ItemID, URL)].self) { group in
                var inFlight = 0
                for files in Self.downloadGroups(wanted) {
                    if inFlight == Self.uploadsInFlight, let done = try await group.next() {
                        for (id, file) in done { fetched[id] = file }
                        inFlight -= 1
                    }
                    // A file's version on disk, unchanged since the scan, may hold most of the new one's chunks.
                    let previous = Dictionary(
                        uniqueKeysWithValues: files.compactMap { id, _ -> (ItemID, URL)? in
                            guard let known = scan.files[id], scan.tree[id]?.contentKey != nil,
                                self.unchanged(id, at: known.path, scan: scan)
                            else { return nil }
                            return (id, self.folder.appendingPathComponent(known.path))
                        })
                    group.addTask { try await self.download(files, previous: previous) }
                    inFlight += 1
                }
                for try await done in group { for (id, file) in done { fetched[id] = file } }
            }
            try synchronize(Array(fetched.values))
        } catch {
            for file in fetched.values { unlink(file.path) }
            throw error
        }
        return fetched
    }

    /// Makes downloaded files durable before they are renamed into place (one sync of the file system).
    func synchronize(_ files: [URL]) throws {
        guard !files.isEmpty else { return }
        let paths = files.map { strdup($0.path) }
        defer { for path in paths { free(path) } }
        guard nimbus_sync_files(folder.path, paths.map { UnsafePointer($0) }, Int32(paths.count)) == 0 else {
            throw NimbusError(.internalError, "cannot sync the downloaded files: \(String(cString: strerror(errno)))")
        }
    }

    /// The downloads in requests: a large file alone, small files together up to a bundle's limits.
    static func downloadGroups(_ files: [(ItemID, DocumentContent)]) -> [[(ItemID, DocumentContent)]] {
        var groups: [[(ItemID, DocumentContent)]] = []
        var small: [(ItemID, DocumentContent)] = []
        var (bytes, chunks) = (Int64(0), 0)
        for file in files {
            guard file.1.size <= Int64(ContentDefinedChunker.standard.maximumSize) else {
                groups.append([file])
                continue
            }
            if bytes + file.1.size > Int64(ChunkBundle.maxBytes) || chunks + file.1.chunks.count > ChunkBundle.maxChunks {
                groups.append(small)
                (small, bytes, chunks) = ([], 0, 0)
            }
            small.append(file)
            bytes += file.1.size
            chunks += file.1.chunks.count
        }
        if !small.isEmpty { groups.append(small) }
        return groups
    }

    private func removeTemporaryFiles() {
        incoming?.removeIdle()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        // Read after the listing: a file downloaded ahead (`IncomingDownloads`) and listed is among these.
        let downloading = incoming?.fileNames ?? []
        for name in names where name.hasPrefix(LocalScanner.temporaryPrefix) && !downloading.contains(name) {
            // Folders too: a package being unpacked, or the old one swapped out, when the daemon was killed.
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        }
    }

    /// Whether a download leaves the item evicted (its placeholder updated, no bytes fetched): it is
    /// evicted now, or new here while the container downloads on demand.
    private func staysEvicted(_ step: SyncOperation, scan: LocalScanner.Scan) -> Bool {
        guard case .download(let item) = step.action, item.kind == .file else { return false }
        guard let current = scan.files[step.item] else { return downloadsOnDemand }
        return Placeholder.isPlaceholder(path: current.path)
    }

    /// Does a step of the disk's side holding the coordination locks of the places it touches.
    private func runOnDisk(
        _ step: SyncOperation, scan: LocalScanner.Scan, fetched: [ItemID: URL], remote: [ItemID: DocumentItem],
        paths: inout ItemTable<String>
    ) async throws {
        var touched = paths[step.item].map { [$0] } ?? []
        switch step.action {
        case .download(let item): if let target = path(of: item.place, in: paths) { touched.append(target) }
        case .moveLocal(let place): if let target = path(of: place, in: paths) { touched.append(target) }
        default: break
        }
        // Moved out and back rather than copied: a copy of every item's path a step cost a round over
        // thousands of files more than its renames.
        var working = ItemTable<String>()
        swap(&working, &paths)
        defer { swap(&working, &paths) }
        try await coordinated(touched, exclusive: true) {
            try await runOnDiskCoordinated(step, scan: scan, fetched: fetched, remote: remote, paths: &working)
        }
    }

    private func runOnDiskCoordinated(
        _ step: SyncOperation, scan: LocalScanner.Scan, fetched: [ItemID: URL], remote: [ItemID: DocumentItem],
        paths: inout ItemTable<String>
    ) async throws {
        let id = step.item
        let current = paths[id]
        // Where the step left the item on the disk, recorded with its synced state in one transaction.
        var local = DeviceJournal.LocalChange.unchanged
        switch step.action {
        case .download(let item):
            guard let target = path(of: item.place, in: paths) else { return }
            if let current, !unchanged(id, at: current, scan: scan) { return }
            if item.kind == .folder {
                if let current {
                    guard current == target || move(current, to: target) else { return }
                } else {
                    let made = folder.appendingPathComponent(target).path
                    ownChanges.expectFolder(made)
                    guard mkdir(made, 0o755) == 0 else { return ownChanges.withdrawFolder(made) }
                }
                local = placed(id, at: target, content: nil, details: nil, paths: &paths)
            } else if staysEvicted(step, scan: scan) {
                let stub = Placeholder.path(for: target)
                let placeholder = Placeholder(
                    name: item.place.name, size: remote[id]?.current?.content.size ?? 0, contentHash: item.content ?? "")
                guard let file = try? writeTemporary(try placeholder.encoded()),
                    let written = LocalScanner.stat(file.path, path: stub), place(file, at: stub, replacing: current)
                else { return }
                local = placed(id, at: stub, content: item.contentKey, details: written, paths: &paths)
            } else if item.kind == .package {
                guard let archive = fetched[id],
                    let written = try placePackage(
                        archive, at: target, replacing: current,
                        unchanged: { current.map { self.unchanged(id, at: $0, scan: scan) } ?? true })
                else { return }
                local = placed(id, at: target, content: item.contentKey, details: written, paths: &paths)
            } else {
                // The file's details as written, taken before it has a name anyone can edit it under.
                guard let file = fetched[id], let written = LocalScanner.stat(file.path, path: target),
                    place(file, at: target, replacing: current)
                else { return }
                local = placed(id, at: target, content: item.contentKey, details: written, paths: &paths)
            }
        case .moveLocal(let place):
            guard let current, let real = path(of: place, in: paths) else { return }
            let target = Placeholder.isPlaceholder(path: current) ? Placeholder.path(for: real) : real
            guard move(current, to: target) else { return }
            // The details the scan read, not the file's now: if it was edited since, the next scan sees
            // they differ and reads it again instead of trusting the old hash.
            let scanned = scan.files[id].map { entry in
                var moved = entry
                moved.path = target
                return moved
            }
            local = placed(id, at: target, content: scan.tree[id]?.contentKey, details: scanned, paths: &paths)
        case .deleteLocal:
            guard let current, unchanged(id, at: current, scan: scan) else { return }
            let url = folder.appendingPathComponent(current)
            if scan.tree[id]?.kind == .folder {
                guard rmdir(url.path) == 0 else { return }  // something is still in it
            } else if scan.tree[id]?.kind == .package {
                guard (try? FileManager.default.removeItem(at: url)) != nil else { return }
            } else {
                guard unlink(url.path) == 0 else { return }
            }
            paths[id] = nil
            local = .removed
        case .record:
            break
        case .upload, .moveRemote, .deleteRemote:
            return
        }
        try await journal.recordDiskStep(id, local, synced: step.synced)
        await activity.finished(id)
    }

    /// Notes where the engine put an item (and a folder's contents, which moved with it) for the rest of the
    /// round, and what the journal is to record of it for the next scan.
    private func placed(
        _ id: ItemID, at target: String, content: ContentKey?, details: LocalScanner.Entry?, paths: inout ItemTable<String>
    ) -> DeviceJournal.LocalChange {
        if let old = paths[id], old != target {
            for (other, path) in paths where path.hasPrefix(old + "/") { paths[other] = target + path.dropFirst(old.count) }
        }
        paths[id] = target
        guard let entry = details ?? LocalScanner.stat(folder.appendingPathComponent(target).path, path: target) else {
            return .unchanged
        }
        return .placed(
            LocalFile(
                id: id, path: target, inode: entry.inode, size: entry.size, modified: entry.modified, contentKey: content))
    }

    /// The relative path of a place whose parent is on the disk.
    private func path(of place: Place, in paths: ItemTable<String>) -> String? {
        guard let parent = place.parent else { return place.name }
        return paths[parent].map { $0 + "/" + place.name }
    }

    /// Whether the file at `path` is still the one the scan read (same inode, size and time; for a
    /// package, its files' total size and latest time), or with `orGrown` that file grown since (a file
    /// still being written).
    private func unchanged(_ id: ItemID, at path: String, scan: LocalScanner.Scan, orGrown: Bool = false) -> Bool {
        guard let known = scan.files[id], known.path == path,
            var now = LocalScanner.stat(folder.appendingPathComponent(path).path, path: path), now.inode == known.inode
        else { return false }
        if scan.tree[id]?.kind == .package {
            guard let details = try? PackageArchive.details(of: folder.appendingPathComponent(path)) else { return false }
            (now.size, now.modified) = details
        } else if orGrown && now.size > known.size {
            return true
        }
        return now.size == known.size && now.modified == known.modified
    }

    /// Renames without ever replacing what is at the target.
    private func move(_ path: String, to target: String) -> Bool {
        nimbus_rename_noreplace(folder.appendingPathComponent(path).path, folder.appendingPathComponent(target).path) == 0
    }

    /// Downloads a group of files (`downloadGroups`) into new temporary files: a large file's chunks one
    /// request each, except those its previous version on disk (`previous`) holds, small files' chunks in
    /// one bundle.
    func download(_ files: [(ItemID, DocumentContent)], previous: [ItemID: URL] = [:]) async throws -> [(ItemID, URL)] {
        if files.count == 1, let (id, content) = files.first, content.size > Int64(ContentDefinedChunker.standard.maximumSize) {
            await activity.started(id, bytes: content.size)
            return [(id, try await downloadLarge(id, content, previous: previous[id]))]
        }
        let hashes = Array(Set(files.flatMap { $0.1.chunks.map(\.hash) }))
        let chunks = Dictionary(try await client.fetch(hashes).map { ($0.hash, $0.bytes) }, uniquingKeysWith: { a, _ in a })
        var written: [(ItemID, URL)] = []
        do {
            for (id, content) in files {
                written.append((id, try write(content, from: chunks)))
            }
        } catch {
            for (_, file) in written { unlink(file.path) }
            throw error
        }
        return written
    }

    /// Downloads a large file's version (`LargeDownload`): the one announced while it uploaded, taken over
    /// with most chunks written, or a new one taking what `previous` (its version on disk) holds.
    private func downloadLarge(_ id: ItemID, _ content: DocumentContent, previous: URL?) async throws -> URL {
        let download: LargeDownload
        if let announced = await incoming?.take(id, for: content) {
            download = announced
            await activity.moved(id, bytes: announced.writtenBytes)
        } else {
            var held: LocalChunks?
            if let previous { held = await LocalChunks(of: previous, wanted: Set(content.chunks.map(\.hash))) }
            download = try LargeDownload(id, into: folder, client: client, held: held)
            _ = download.extend(content.chunks, from: 0)
        }
        do {
            try await download.run(activity: activity)
            return try download.finish(content)
        } catch {
            download.discard()
            throw error
        }
    }

    /// A new temporary file holding `bytes`.
    func writeTemporary(_ bytes: Data) throws -> URL {
        let (temporary, handle) = try createTemporary()
        defer { try? handle.close() }
        do {
            try handle.write(contentsOf: bytes)
        } catch {
            unlink(temporary.path)
            throw error
        }
        return temporary
    }

    /// A new empty file at the folder's root, under a name scans skip.
    private func createTemporary() throws -> (URL, FileHandle) { try VersionFile.create(in: folder) }

    /// Writes a version into a new temporary file (not yet synced) from its chunks' bytes by hash, checking
    /// every chunk and the whole against their hashes.
    private func write(_ content: DocumentContent, from chunks: [String: Data]) throws -> URL {
        let file = try VersionFile(in: folder)
        do {
            for chunk in content.chunks { try (chunks[chunk.hash] ?? Data()).withUnsafeBytes { try file.append($0, as: chunk) } }
            return try file.finish(content)
        } catch {
            file.discard()
            throw error
        }
    }

    /// Rebuilds a downloaded package from its stream beside the folder's contents and swaps it into place in
    /// one step (the old one, checked unchanged, is then removed): its details as placed, or nil when it
    /// could not be placed (the next round tries again).
    private func placePackage(
        _ archive: URL, at target: String, replacing current: String?, unchanged: () -> Bool
    ) throws -> LocalScanner.Entry? {
        let unpacked = folder.appendingPathComponent(LocalScanner.temporaryPrefix + UUIDString.random())
        defer { try? FileManager.default.removeItem(at: unpacked) }
        guard (try? PackageArchive.unpack(archive, into: unpacked)) != nil else { return nil }
        try synchronize([unpacked])
        // Unpacking took a while: an app may have saved into the old package meanwhile, and that save wins.
        guard unchanged() else { return nil }
        let targetURL = folder.appendingPathComponent(target)
        if let current, current == target {
            // The old package ends up at the temporary name, removed by the defer.
            guard nimbus_rename_exchange(unpacked.path, targetURL.path) == 0 else { return nil }
        } else {
            guard nimbus_rename_noreplace(unpacked.path, targetURL.path) == 0 else { return nil }
            if let current { try? FileManager.default.removeItem(at: folder.appendingPathComponent(current)) }
        }
        guard var entry = LocalScanner.stat(targetURL.path, path: target) else { return nil }
        (entry.size, entry.modified) = try PackageArchive.details(of: targetURL)
        return entry
    }

    /// Renames a downloaded file into place, so no reader ever sees half a file. It replaces only
    /// `current` (the item's own file, checked unchanged), and removes that file when the item moved.
    func place(_ file: URL, at target: String, replacing current: String?) -> Bool {
        let targetPath = folder.appendingPathComponent(target).path
        ownChanges.expect(targetPath)
        let renamed =
            current == target
            ? rename(file.path, targetPath) == 0 : nimbus_rename_noreplace(file.path, targetPath) == 0
        guard renamed else {
            ownChanges.withdraw(targetPath)
            return false
        }
        if let current, current != target { unlink(folder.appendingPathComponent(current).path) }
        return true
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
