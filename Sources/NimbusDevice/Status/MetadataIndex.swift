import Foundation
import NimbusCore
import NimbusKit

/// What apps' metadata queries search: every item of the container (downloaded or not) with its path,
/// size, dates and sync state, from the journal and the engine's activity. It is built when an app first
/// asks, then kept current from the journal's and the activity's change notices: only the items they name
/// (and, for a folder that moved, what is inside it) are read again, and each watch hears of those that
/// came to match its query, changed, or stopped matching.
package actor MetadataIndex {
    private let journal: DeviceJournal
    private let activity: SyncActivity
    private var facts: MetadataSnapshot
    private var folder: String { facts.folder }
    /// Each folder's items on the server, built when a folder first changes (a query's first answer does
    /// without it), then kept current.
    private var children: [ItemID: Set<ItemID>]?
    private var loading: Task<Void, any Error>?
    private var watchers: [UUID: Watcher] = [:]
    private let notices: AsyncStream<Set<ItemID>>.Continuation

    private struct Watcher {
        var spec: MetadataQuerySpec
        var matched: Set<ItemID>
        var output: AsyncStream<ControlResponse>.Continuation
        /// While its items are being gathered: the items changed meanwhile, reported once it has them.
        var changedWhileGathering: Set<ItemID>?
    }

    package init(journal: DeviceJournal, activity: SyncActivity, folder: URL) {
        self.journal = journal
        self.activity = activity
        self.facts = MetadataSnapshot(folder: folder.standardizedFileURL.path)
        let (stream, notices) = AsyncStream.makeStream(of: Set<ItemID>.self)
        self.notices = notices
        journal.observe { notices.yield($0) }
        Task(executorPreference: DeviceExecutor.shared) { [weak self] in
            await activity.observe { notices.yield($0) }
            for await ids in stream {
                guard let self else { return }
                await self.refresh(ids)
            }
        }
    }

    deinit { notices.finish() }

    /// The items matching `spec` now.
    package func query(_ spec: MetadataQuerySpec) async throws -> [MetadataItem] {
        try await load()
        return await evaluate(spec, facts).items
    }

    /// The items matching `spec` (none when it does not gather), and a stream of updates until it is
    /// cancelled. Changes made while the items are gathered come as the first update.
    package func watch(_ spec: MetadataQuerySpec) async throws -> ([MetadataItem], AsyncStream<ControlResponse>) {
        try await load()
        let (updates, output) = AsyncStream.makeStream(of: ControlResponse.self)
        let id = UUID()
        // Registered in the same turn as the snapshot is taken: every change after it is noted for this watch.
        watchers[id] = Watcher(spec: spec, matched: [], output: output, changedWhileGathering: [])
        output.onTermination = { [weak self] _ in Task(executorPreference: DeviceExecutor.shared) { await self?.unwatch(id) } }
        let (items, work) = await evaluate(MetadataQuerySpec(scopes: spec.scopes, predicate: spec.predicate), facts)
        guard watchers[id] != nil else { return ([], updates) }
        // The set of what matched (100,000 IDs for a large query) is made while the answer goes out: until the
        // watch has it, it stays gathering, noting what changes.
        Task(executorPreference: DeviceExecutor.shared) { [weak self] in
            let matched = Set(items.lazy.map { ItemID($0.id) })
            await self?.finishGathering(id, matched: matched, gathered: items, work: work)
        }
        return (spec.gather ? items : [], updates)
    }

    /// Gives a watch the set of what it gathered and tells it what changed while it gathered: against what was
    /// gathered, with their sync state as it was then (the activity's next notice updates it).
    private func finishGathering(
        _ id: UUID, matched: Set<ItemID>, gathered items: [MetadataItem], work: [ItemID: SyncActivity.ItemFacts]
    ) {
        guard var watcher = watchers[id] else { return }
        watcher.matched = matched
        let changed = watcher.changedWhileGathering ?? []
        watcher.changedWhileGathering = nil
        if !changed.isEmpty {
            let wanted = Set(changed.map(\.rawValue))
            var gathered: [ItemID: MetadataItem?] = [:]
            for item in items where wanted.contains(item.id) { gathered[ItemID(item.id)] = item }
            var memo: [ItemID: String] = [:]
            let now = Dictionary(uniqueKeysWithValues: changed.map { ($0, facts.item($0, work[$0], memo: &memo)) })
            let update = diff(changed, before: gathered, after: now, for: &watcher, changed: changed)
            if !update.isEmpty { watcher.output.yield(ControlResponse(update: update)) }
        }
        watchers[id] = watcher
    }

    /// `spec` over `snapshot` on two threads (a query may cover 100,000 items), and the activity's facts used.
    private func evaluate(_ spec: MetadataQuerySpec, _ snapshot: MetadataSnapshot) async -> (
        items: [MetadataItem], work: [ItemID: SyncActivity.ItemFacts]
    ) {
        let work = await activity.allFacts()
        let folders = snapshot.folderPaths()
        let isWanted: @Sendable (MetadataItem) -> Bool = { Self.matches(spec, $0, folder: snapshot.folder) }
        var items: [MetadataItem] = []
        var onBothSides = 0
        for (part, linked) in await Self.inHalves({
            snapshot.serverItems(part: $0, of: 2, activity: work, folders: folders, isWanted)
        }) {
            items += part
            onBothSides += linked
        }
        // Items only on the disk (not uploaded yet), when there are any: the disk's items the server lists too
        // were counted, so a synced container spends no lookup on each of its items to find none.
        if snapshot.localCount > onBothSides {
            for part in await Self.inHalves({ snapshot.diskOnlyItems(part: $0, of: 2, activity: work, isWanted) }) {
                items += part
            }
        }
        return (items, work)
    }

    /// `body(0)` and `body(1)` at once.
    private static func inHalves<T: Sendable>(_ body: @escaping @Sendable (Int) -> T) async -> [T] {
        await withTaskGroup(of: T.self) { group in
            for part in 0..<2 { group.addTask { body(part) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    private func unwatch(_ id: UUID) { watchers[id] = nil }

    private func load() async throws {
        if loading == nil {
            loading = Task {
                try await DeviceExecutor.run {
                    let all = try await journal.metadata(of: nil)
                    facts.take(all)
                    children = nil
                }
            }
        }
        do {
            try await loading?.value
        } catch {
            loading = nil
            throw error
        }
    }

    /// Reads `ids` again and tells each watch what that changed.
    private func refresh(_ ids: Set<ItemID>) async {
        guard let loading, (try? await loading.value) != nil else { return }
        guard let fresh = try? await journal.metadata(of: ids) else { return }
        // What is inside a folder that moved moves with it: below each item, as the index had it and as it is now.
        var freshChildren: [ItemID: [ItemID]] = [:]
        for (id, item) in fresh.remote { if let parent = item.parent { freshChildren[parent, default: []].append(id) } }
        var affected = ids
        for id in ids where facts.remote(id)?.kind == .folder || fresh.remote[id]?.kind == .folder {
            affected.formUnion(descendants(of: id, also: freshChildren))
        }
        let work = await activity.facts(affected)
        // From here on nothing awaits: the before and after below are of one moment.
        var memo: [ItemID: String] = [:]
        let before = Dictionary(uniqueKeysWithValues: affected.map { ($0, facts.item($0, work[$0], memo: &memo)) })
        for id in ids {
            if let parent = facts.remote(id)?.parent { children?[parent]?.remove(id) }
            facts.set(id, from: fresh)
            if let parent = facts.remote(id)?.parent { children?[parent, default: []].insert(id) }
        }
        memo = [:]
        let after = Dictionary(uniqueKeysWithValues: affected.map { ($0, facts.item($0, work[$0], memo: &memo)) })
        for (watchID, var watcher) in watchers {
            if watcher.changedWhileGathering != nil {
                watcher.changedWhileGathering?.formUnion(affected)
            } else {
                let update = diff(affected, before: before, after: after, for: &watcher, changed: ids)
                if !update.isEmpty { watcher.output.yield(ControlResponse(update: update)) }
            }
            watchers[watchID] = watcher
        }
    }

    /// What `before` → `after` of `affected` means to a watch: items that came to match its query, changed
    /// (`changed` ones always count as changed), or stopped matching; its matched set follows.
    private func diff(
        _ affected: Set<ItemID>, before: [ItemID: MetadataItem?], after: [ItemID: MetadataItem?], for watcher: inout Watcher,
        changed: Set<ItemID>
    ) -> MetadataUpdate {
        var update = MetadataUpdate()
        for id in affected.sorted(by: { (after[$0]??.path ?? "") < (after[$1]??.path ?? "") }) {
            let old = before[id] ?? nil
            guard let new = after[id] ?? nil, Self.matches(watcher.spec, new, folder: folder) else {
                if watcher.matched.remove(id) != nil, let gone = old ?? after[id] ?? nil { update.removed.append(gone) }
                continue
            }
            if watcher.matched.insert(id).inserted {
                update.added.append(new)
            } else if old != new || changed.contains(id) {
                update.changed.append(new)
                if let old, old.path != new.path { update.previousPaths[id.rawValue] = old.path }
            }
        }
        return update
    }

    /// Every item below `id` in the index's remote tree or in `extra` (children by parent).
    private func descendants(of id: ItemID, also extra: [ItemID: [ItemID]]) -> Set<ItemID> {
        let children = children ?? facts.children()
        self.children = children
        var found: Set<ItemID> = []
        var queue = [id]
        while let next = queue.popLast() {
            for child in (children[next] ?? []).union(extra[next] ?? []) where found.insert(child).inserted {
                queue.append(child)
            }
        }
        return found
    }

    static func matches(_ spec: MetadataQuerySpec, _ item: MetadataItem, folder: String) -> Bool {
        var path = item.path
        // Over the path's bytes in place: through the generic `starts(with:)` this was a tenth of matching an item.
        let (inDocuments, isDocuments) = path.withUTF8 { bytes in
            let relative = UnsafeBufferPointer(rebasing: bytes[min(bytes.count, folder.utf8.count + 1)...])
            return (relative.starts(with: "Documents/".utf8), relative.elementsEqual("Documents".utf8))
        }
        let scoped =
            (spec.scopes.contains(.documents) && inDocuments)
            || (spec.scopes.contains(.data) && !inDocuments && !isDocuments)
        return scoped && spec.predicate.matches { item.value(forAttribute: $0) }
    }
}

/// The index's facts at one moment: a value, so a query can evaluate it off the actor.
struct MetadataSnapshot: Sendable {
    /// The container's folder, absolute.
    let folder: String
    /// Every item's facts, as the journal holds them.
    private var facts = MetadataFacts()

    init(folder: String) { self.folder = folder }

    func remote(_ id: ItemID) -> RemoteFacts? { facts.remote[id] }

    /// Each folder's items, by the server's tree.
    func children() -> [ItemID: Set<ItemID>] {
        var children: [ItemID: Set<ItemID>] = [:]
        for (id, server) in facts.remote { if let parent = server.parent { children[parent, default: []].insert(id) } }
        return children
    }

    /// Takes every item's facts, as read from the journal.
    mutating func take(_ facts: MetadataFacts) { self.facts = facts }

    /// Takes `id`'s facts from `fresh`, where it may lack them (the item is gone).
    mutating func set(_ id: ItemID, from fresh: MetadataFacts) {
        facts.remote[id] = fresh.remote[id]
        facts.local[id] = fresh.local[id]
    }

    /// The item as apps see it, nil when neither the server nor the disk has it.
    func item(
        _ id: ItemID, _ activity: SyncActivity.ItemFacts?,
        memo: inout [ItemID: String]
    ) -> MetadataItem? {
        let (server, disk) = (facts.remote[id], localFacts(id))
        guard server != nil || disk != nil, let relative = path(of: id, memo: &memo) else { return nil }
        return item(id, server, disk, activity, path: folder + "/" + relative)
    }

    /// How many items the disk has (the server may not list them all yet).
    var localCount: Int { facts.local.count }

    /// The `part`th of `parts` of the items the server lists (`activity` holds every item's that has any), those
    /// `isWanted` keeps, and how many of them the disk has too. For queries over 100,000 items: each folder's
    /// path is worked out once (`folders`, from `folderPaths()`), and each item's facts are read where they lie
    /// rather than looked up by ID.
    func serverItems(
        part: Int, of parts: Int, activity: [ItemID: SyncActivity.ItemFacts], folders: [ItemID: String],
        _ isWanted: (MetadataItem) -> Bool
    ) -> (items: [MetadataItem], onDisk: Int) {
        var memo: [ItemID: String] = [:]
        var found: [MetadataItem] = []
        var onDisk = 0
        for position in Self.range(part, of: parts, count: facts.remote.count) {
            let (id, server) = (facts.remote.keys[position], facts.remote.values[position])
            let work = activity[id]
            let path: String
            if let parent = server.parent {
                guard let above = folders[parent] else {
                    // Below a folder the server does not list (yet): as one item is found.
                    if facts.local.contains(id) { onDisk += 1 }
                    if let item = item(id, work, memo: &memo), isWanted(item) { found.append(item) }
                    continue
                }
                path = above + "/" + server.name
            } else {
                path = folder + "/" + server.name
            }
            let disk = localFacts(id)
            if disk != nil { onDisk += 1 }
            let item = item(id, server, disk, work, path: path)
            if isWanted(item) { found.append(item) }
        }
        return (found, onDisk)
    }

    /// The `part`th of `parts` of the items only the disk has (not uploaded yet), those `isWanted` keeps: where
    /// the disk has them.
    func diskOnlyItems(
        part: Int, of parts: Int, activity: [ItemID: SyncActivity.ItemFacts], _ isWanted: (MetadataItem) -> Bool
    ) -> [MetadataItem] {
        var memo: [ItemID: String] = [:]
        var found: [MetadataItem] = []
        for position in Self.range(part, of: parts, count: facts.local.count) {
            let id = facts.local.keys[position]
            if !facts.remote.contains(id), let item = item(id, activity[id], memo: &memo), isWanted(item) { found.append(item) }
        }
        return found
    }

    /// The absolute path of every folder, for `items(part:of:activity:folders:_:)`.
    func folderPaths() -> [ItemID: String] {
        var memo: [ItemID: String] = [:]
        for (id, server) in facts.remote where server.kind == .folder { _ = path(of: id, memo: &memo) }
        return memo.mapValues { folder + "/" + $0 }
    }

    /// The positions of the `part`th of `parts` of a table's `count` entries.
    private static func range(_ part: Int, of parts: Int, count: Int) -> Range<Int> {
        count * part / parts..<count * (part + 1) / parts
    }

    /// `id`'s facts on the disk, read in place: the path beside them is not copied (nor its reference count touched).
    private func localFacts(_ id: ItemID) -> LocalFacts? {
        facts.local.position(of: id).map { facts.local.values[$0].facts }
    }

    /// The item from its facts, at the absolute `path`.
    private func item(
        _ id: ItemID, _ server: RemoteFacts?, _ disk: LocalFacts?, _ activity: SyncActivity.ItemFacts?, path: String
    ) -> MetadataItem {
        let evicted = disk?.isPlaceholder ?? false
        let isFolder = server?.kind == .folder || (server == nil && disk?.content == nil)
        let work = activity?.work
        let percent = activity?.progress.map { $0.total == 0 ? 100 : 100 * Double($0.done) / Double($0.total) }
        let status: MetadataItem.DownloadingStatus
        if isFolder {
            status = .current
        } else if disk == nil || evicted {
            status = .notDownloaded
        } else if server == nil || disk?.content == server?.content || work == .upload {
            status = .current
        } else {
            status = .downloaded
        }
        let uploaded =
            server != nil && work != .upload && (isFolder || evicted || disk == nil || disk?.content == server?.content)
        let onDisk = evicted ? nil : disk
        return MetadataItem(
            id: id.rawValue, path: path, isDirectory: isFolder,
            size: isFolder ? 0 : (onDisk?.size ?? server?.size ?? 0),
            creationDate: server?.created.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            modificationDate: onDisk.map { Date(timeIntervalSince1970: Double($0.modified) / 1_000_000_000) }
                ?? server?.modified.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            downloadingStatus: status, isDownloading: work == .download, isUploading: work == .upload, isUploaded: uploaded,
            percentDownloaded: work == .download ? percent : (status == .notDownloaded ? 0 : 100),
            percentUploaded: work == .upload ? percent : (uploaded ? 100 : 0),
            downloadingError: work == .download ? activity?.waiting?.reason : nil,
            uploadingError: activity?.refusal?.reason ?? (work == .upload ? activity?.waiting?.reason : nil),
            hasUnresolvedConflicts: (server?.conflicts ?? 0) > 0)
    }

    /// Where the item is, relative to the folder: by the server's names while it has the item (a placeholder
    /// is listed by its real name), else where it is on the disk.
    func path(of id: ItemID, memo: inout [ItemID: String]) -> String? {
        if let known = memo[id] { return known }
        var found: String?
        let server = facts.remote[id]
        if let server {
            if let parent = server.parent {
                found = path(of: parent, memo: &memo).map { $0 + "/" + server.name }
            } else {
                found = server.name
            }
        }
        let disk = facts.local[id]
        if found == nil, let disk { found = Placeholder.realPath(of: disk.path) }
        if let found, server?.kind == .folder || (server == nil && disk?.facts.content == nil) { memo[id] = found }
        return found
    }
}
