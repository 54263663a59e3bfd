import Foundation
import NimbusCore

/// A live search of a ubiquity container (`NSMetadataQuery`): it gathers the items matching its predicate
/// from the device daemon's state (items not downloaded yet included), says so once, then reports each
/// change as an update of added, changed and removed items, in the order they happened.
///
/// ```swift
/// let query = MetadataQuery(device: device)
/// query.predicate = try MetadataPredicate("%K LIKE '*.bookmark'", [.string(MetadataItem.Key.fsName)])
/// try await query.start()
/// for await event in query.events { if case .updated = event { show(query.results) } }
/// ```
public final class MetadataQuery: @unchecked Sendable {
    /// Where to search (`NSMetadataQueryUbiquitousDocumentsScope`, `…DataScope`).
    public enum Scope: String, Codable, Sendable, Hashable {
        /// Inside the container's `Documents` folder: what the user sees.
        case documents
        /// Everything else in the container: the app's private data.
        case data
    }

    /// A key (`MetadataItem.Key`) and a direction, as record queries sort.
    public typealias SortDescriptor = Query.SortDescriptor

    public enum Event: Sendable, Hashable {
        /// The first results are in (`NSMetadataQueryDidFinishGathering`).
        case gatheringFinished([MetadataItem])
        /// What changed since the last event (`NSMetadataQueryDidUpdate`).
        case updated(added: [MetadataItem], changed: [MetadataItem], removed: [MetadataItem])
    }

    private let device: UbiquityDevice
    private let container: String?
    private let lock = NSLock()
    private var _searchScopes: [Scope] = [.documents]
    private var _predicate: MetadataPredicate = .always(true)
    private var _sortDescriptors: [SortDescriptor] = []
    private var _results: [MetadataItem] = []
    /// The results by ID, kept with `_results` (an update must not rebuild a map of every result). Built on a
    /// thread of its own once the results are gathered (for 100,000 items it took a tenth of the gathering), or
    /// by an update that comes first; nil until then.
    private var byID: [String: MetadataItem]?
    /// Which `start()` the results are of, so that a table built for an earlier one is not taken.
    private var gatherings = 0
    private var disabled = 0
    private var held: [MetadataUpdate] = []
    private var watch: DaemonConnection.Watch?
    private var forwarding: Task<Void, Never>?
    private let continuation: AsyncStream<Event>.Continuation
    /// Gathering finished, then updates, until `stop()`.
    public let events: AsyncStream<Event>

    /// A query of `container` (nil: the app's first) on `device`.
    public init(device: UbiquityDevice, container: String? = nil) {
        self.device = device
        self.container = container
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    public var searchScopes: [Scope] {
        get { lock.withLock { _searchScopes } }
        set { lock.withLock { _searchScopes = newValue } }
    }

    public var predicate: MetadataPredicate {
        get { lock.withLock { _predicate } }
        set { lock.withLock { _predicate = newValue } }
    }

    public var sortDescriptors: [SortDescriptor] {
        get { lock.withLock { _sortDescriptors } }
        set {
            lock.withLock {
                _sortDescriptors = newValue
                _results.sort(by: order)
            }
        }
    }

    /// The matching items, in the sort descriptors' order (ties by path); with none, in no particular order
    /// (as `NSMetadataQuery`'s). Frozen while updates are disabled.
    public var results: [MetadataItem] { lock.withLock { _results } }

    /// Gathers, then follows changes. Throws when no daemon serves the device's root or the container.
    public func start() async throws {
        // No waiting for the daemon's first round: what it brings arrives as updates.
        guard let folder = await device.containerFolder(container, waitingForFirstRound: false) else {
            throw NimbusError(
                .networkUnavailable,
                "no nimbus device daemon serves \(container ?? "the app's container") at \(device.root.path)")
        }
        let spec = lock.withLock { MetadataQuerySpec(scopes: _searchScopes, predicate: _predicate) }
        let watch = try await DaemonConnection.watch(
            ControlRequest(command: .watch, path: folder.path, query: spec), root: device.root)
        let gathered = lock.withLock {
            self.watch = watch
            _results = watch.first.items ?? []
            if !_sortDescriptors.isEmpty { _results.sort(by: order) }
            byID = nil
            gatherings += 1
            return (results: _results, number: gatherings)
        }
        Thread.detachNewThread { [weak self] in
            let table = Self.table(gathered.results)
            guard let self else { return }
            lock.withLock { if gatherings == gathered.number && byID == nil { byID = table } }
        }
        continuation.yield(.gatheringFinished(gathered.results))
        forwarding = Task { [weak self] in
            do {
                for try await update in watch.updates { self?.receive(update) }
            } catch {}
        }
    }

    /// Stops following changes and ends `events`.
    public func stop() {
        lock.withLock {
            watch?.cancel()
            forwarding?.cancel()
        }
        continuation.finish()
    }

    /// Holds updates (and `results`) until as many `enableUpdates()` calls: while the app walks the results.
    public func disableUpdates() { lock.withLock { disabled += 1 } }

    /// Lets updates through again; those held arrive as one.
    public func enableUpdates() {
        lock.withLock {
            disabled = max(0, disabled - 1)
            guard disabled == 0, !held.isEmpty else { return }
            apply(held)
            held = []
        }
    }

    deinit { stop() }

    /// Holds or applies an update, under the lock: updates take effect, and are reported, in their order.
    private func receive(_ update: MetadataUpdate) {
        lock.withLock {
            if disabled > 0 { held.append(update) } else { apply([update]) }
        }
    }

    /// `items` by ID (the first of each), filled in place: built from an array of pairs, 100,000 items were
    /// copied twice more.
    private static func table(_ items: [MetadataItem]) -> [String: MetadataItem] {
        var table: [String: MetadataItem] = [:]
        table.reserveCapacity(items.count)
        for item in items where table[item.id] == nil { table[item.id] = item }
        return table
    }

    /// Applies updates to the results and reports what they changed as one event. Called holding the lock.
    private func apply(_ updates: [MetadataUpdate]) {
        if byID == nil { byID = Self.table(_results) }
        let event: Event? = {
            var before: [String: MetadataItem] = [:]
            var after: [String: MetadataItem?] = [:]
            var touched: [String] = []
            for update in updates {
                for item in update.removed + update.added + update.changed where after[item.id] == nil {
                    before[item.id] = byID?[item.id]
                    touched.append(item.id)
                    after[item.id] = .some(byID?[item.id])
                }
                for item in update.removed { after[item.id] = .some(nil) }
                for item in update.added + update.changed { after[item.id] = item }
            }
            var added: [MetadataItem] = []
            var changed: [MetadataItem] = []
            var removed: [MetadataItem] = []
            for id in touched {
                switch (before[id], after[id] ?? nil) {
                case (nil, let item?): added.append(item)
                case (let old?, nil): removed.append(old)
                case (_, let item?): changed.append(item)
                case (nil, nil): break
                }
            }
            guard !(added.isEmpty && changed.isEmpty && removed.isEmpty) else { return nil }
            for old in before.values { remove(old) }
            for item in added + changed {
                if _sortDescriptors.isEmpty { _results.append(item) } else { _results.insert(item, at: insertionIndex(of: item)) }
                byID?[item.id] = item
            }
            return .updated(added: added, changed: changed, removed: removed)
        }()
        if let event { continuation.yield(event) }
    }

    /// Takes `item` (as the results hold it) out of them: found by binary search, else by a walk.
    private func remove(_ item: MetadataItem) {
        byID?[item.id] = nil
        guard !_sortDescriptors.isEmpty else {
            if let found = _results.firstIndex(where: { $0.id == item.id }) { _results.remove(at: found) }
            return
        }
        var index = insertionIndex(of: item)
        while index < _results.count, _results[index].id != item.id, !order(item, _results[index]) { index += 1 }
        if index < _results.count, _results[index].id == item.id {
            _results.remove(at: index)
        } else if let found = _results.firstIndex(where: { $0.id == item.id }) {
            _results.remove(at: found)
        }
    }

    /// Where `item` goes in the sorted results (binary search).
    private func insertionIndex(of item: MetadataItem) -> Int {
        var (low, high) = (0, _results.count)
        while low < high {
            let middle = (low + high) / 2
            if order(_results[middle], item) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func order(_ a: MetadataItem, _ b: MetadataItem) -> Bool {
        for descriptor in _sortDescriptors {
            let (x, y) = (a.value(forAttribute: descriptor.key), b.value(forAttribute: descriptor.key))
            if x == y { continue }
            guard let x else { return !descriptor.ascending }
            guard let y else { return descriptor.ascending }
            let less = Self.less(x, y)
            if less == Self.less(y, x) { continue }
            return descriptor.ascending ? less : !less
        }
        return a.path < b.path
    }

    private static func less(_ a: MetadataValue, _ b: MetadataValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): x.localizedStandardCompare(y) == .orderedAscending
        case (.number(let x), .number(let y)): x < y
        case (.date(let x), .date(let y)): x < y
        default: false
        }
    }
}
