import Foundation
import NimbusCore

/// An object that shows an item of a container and wants to hear when others change it
/// (`NSFilePresenter`): register it with `FileCoordinator.addFilePresenter(_:)`. Calls arrive on a
/// background task, one at a time, in the order things happened; every method has a default that does
/// nothing.
public protocol FilePresenter: AnyObject, Sendable {
    /// The item presented; a presenter that hears it moved updates it.
    var presentedItemURL: URL? { get }
    /// Its content changed (another app, or another device's version arrived).
    func presentedItemDidChange()
    func presentedItemDidMove(to newURL: URL)
    /// It was deleted (here or on another device).
    func accommodatePresentedItemDeletion()
    /// Another device saved a version that conflicts with this one.
    func presentedItemDidGain(_ version: FileVersion)
    /// A conflict version was resolved (on any device).
    func presentedItemDidResolveConflict(_ version: FileVersion)
    /// Something inside the presented folder changed, appeared, moved or went away.
    func presentedSubitemDidChange(at url: URL)
}

extension FilePresenter {
    public func presentedItemDidChange() {}
    public func presentedItemDidMove(to newURL: URL) {}
    public func accommodatePresentedItemDeletion() {}
    public func presentedItemDidGain(_ version: FileVersion) {}
    public func presentedItemDidResolveConflict(_ version: FileVersion) {}
    public func presentedSubitemDidChange(at url: URL) {}
}

/// This process's presenters, and one watch on the daemon per container folder they present items of.
final class PresenterRegistry: @unchecked Sendable {
    static let shared = PresenterRegistry()

    enum Change: Sendable {
        case changed(URL)
        case deleted(URL)
        case moved(URL, to: URL)
    }

    private struct Entry {
        weak var presenter: (any FilePresenter)?
        /// The unresolved conflict versions it was last told of.
        var conflicts: [String: FileVersion] = [:]
    }

    private let lock = NSLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var watches: [String: DaemonConnection.Watch] = [:]
    /// Container folders a watch loop runs for.
    private var watching: Set<String> = []
    /// One event at a time, in order, to every presenter.
    private let (queue, queueInput) = AsyncStream.makeStream(of: (Change, ObjectIdentifier?, Bool).self)

    private init() {
        let queue = queue
        Task.detached { [weak self] in
            for await (change, except, fromDaemon) in queue {
                await self?.deliver(change, except: except, fromDaemon: fromDaemon)
            }
        }
    }

    func add(_ presenter: any FilePresenter) {
        lock.withLock { entries[ObjectIdentifier(presenter)] = Entry(presenter: presenter) }
        guard let url = presenter.presentedItemURL?.standardizedFileURL, let device = UbiquityDevice.holding(url),
            let folder = Self.containerFolder(of: url, in: device)
        else { return }
        let starting = lock.withLock { watching.insert(folder.path).inserted }
        guard starting else { return }
        Task {
            while true {
                await startWatching(folder, device)
                // A presenter added as the loop was ending finds no loop running: it starts again for it.
                let again = lock.withLock {
                    guard !presentedURLsLocked(inside: folder).isEmpty else {
                        watching.remove(folder.path)
                        return false
                    }
                    return true
                }
                if !again { return }
            }
        }
    }

    func remove(_ presenter: any FilePresenter) {
        let idle: [DaemonConnection.Watch] = lock.withLock {
            entries.removeValue(forKey: ObjectIdentifier(presenter))
            let presented = entries.values.compactMap { $0.presenter?.presentedItemURL?.standardizedFileURL.path }
            return watches.filter { folder, _ in !presented.contains { $0.hasPrefix(folder + "/") } }.map(\.value)
        }
        for watch in idle { watch.cancel() }
    }

    /// A change made by a coordinator of this process, for every presenter but `except`.
    func announce(_ change: Change, except: (any FilePresenter)?) {
        queueInput.yield((change, except.map(ObjectIdentifier.init), false))
    }

    /// `ROOT/Mobile Documents/<container>` holding `url`.
    private static func containerFolder(of url: URL, in device: UbiquityDevice) -> URL? {
        let top = device.root.appendingPathComponent("Mobile Documents").path + "/"
        guard url.path.hasPrefix(top), let name = url.path.dropFirst(top.count).split(separator: "/").first else { return nil }
        return URL(fileURLWithPath: top + name, isDirectory: true)
    }

    /// Follows the daemon's changes of a container folder while presenters of items in it remain; when the
    /// daemon goes away (restarted, say), connects again, and then has every presenter there check its item,
    /// since what happened meanwhile was not heard.
    private func startWatching(_ folder: URL, _ device: UbiquityDevice) async {
        let spec = MetadataQuerySpec(scopes: [.documents, .data], predicate: .always(true), gather: false)
        var reconnecting = false
        var backoff = Duration.milliseconds(50)
        while presents(inside: folder) {
            guard
                let watch = try? await DaemonConnection.watch(
                    ControlRequest(command: .watch, path: folder.path, query: spec), root: device.root)
            else {
                reconnecting = true
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
                continue
            }
            backoff = .milliseconds(50)
            lock.withLock { watches[folder.path] = watch }
            if reconnecting {
                for url in presentedURLs(inside: folder) { queueInput.yield((.changed(url), nil, true)) }
            }
            do {
                for try await update in watch.updates {
                    for item in update.removed { queueInput.yield((.deleted(item.url), nil, true)) }
                    for item in update.added + update.changed {
                        if let previous = update.previousPaths[item.id] {
                            queueInput.yield((.moved(URL(fileURLWithPath: previous), to: item.url), nil, true))
                        }
                        queueInput.yield((.changed(item.url), nil, true))
                    }
                }
            } catch {}
            reconnecting = true
        }
        lock.withLock { watches[folder.path] = nil }
    }

    private func presentedURLs(inside folder: URL) -> [URL] { lock.withLock { presentedURLsLocked(inside: folder) } }

    private func presentedURLsLocked(inside folder: URL) -> [URL] {
        entries.values.compactMap { $0.presenter?.presentedItemURL?.standardizedFileURL }
            .filter { $0.path.hasPrefix(folder.path + "/") }
    }

    private func presents(inside folder: URL) -> Bool { !presentedURLs(inside: folder).isEmpty }

    private func deliver(_ change: Change, except: ObjectIdentifier?, fromDaemon: Bool) async {
        let presenters = lock.withLock {
            entries.compactMap { id, entry in id == except ? nil : entry.presenter.map { (id, $0) } }
        }
        for (id, presenter) in presenters {
            guard let presented = presenter.presentedItemURL?.standardizedFileURL.path else { continue }
            switch change {
            case .changed(let url):
                if url.path == presented {
                    presenter.presentedItemDidChange()
                    if fromDaemon { await updateConflicts(of: presenter, id: id, at: url) }
                } else if url.path.hasPrefix(presented + "/") {
                    presenter.presentedSubitemDidChange(at: url)
                }
            case .deleted(let url):
                if url.path == presented {
                    presenter.accommodatePresentedItemDeletion()
                } else if url.path.hasPrefix(presented + "/") {
                    presenter.presentedSubitemDidChange(at: url)
                }
            case .moved(let from, let to):
                if from.path == presented {
                    presenter.presentedItemDidMove(to: to)
                } else if from.path.hasPrefix(presented + "/") || to.path.hasPrefix(presented + "/") {
                    presenter.presentedSubitemDidChange(at: to)
                }
            }
        }
    }

    /// Tells the presenter of conflict versions that appeared or were resolved since it last heard.
    private func updateConflicts(of presenter: any FilePresenter, id: ObjectIdentifier, at url: URL) async {
        guard let versions = try? await FileVersion.unresolvedConflictVersionsOfItem(at: url) else { return }
        let now = Dictionary(versions.map { ($0.persistentIdentifier, $0) }, uniquingKeysWith: { a, _ in a })
        let before = lock.withLock {
            let before = entries[id]?.conflicts ?? [:]
            entries[id]?.conflicts = now
            return before
        }
        for (versionID, version) in now.sorted(by: { $0.key < $1.key }) where before[versionID] == nil {
            presenter.presentedItemDidGain(version)
        }
        for (versionID, version) in before.sorted(by: { $0.key < $1.key }) where now[versionID] == nil {
            presenter.presentedItemDidResolveConflict(version)
        }
    }
}
