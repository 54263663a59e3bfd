import CFileOps
import Foundation
import NimbusCore

/// A document in a ubiquity container (`UIDocument`): subclass it, override `load(fromContents:ofType:)`
/// and `contents(forType:)`, and it opens, saves and autosaves through file coordination, off the caller's
/// task. It presents its file: when another device's version arrives it reloads (if it has no unsaved
/// changes), when it moves it follows, and when versions conflict its state says `inConflict` until they
/// are resolved (`FileVersion`).
///
/// ```swift
/// final class Note: Document, @unchecked Sendable {
///     var text = ""
///     override func contents(forType type: String?) throws -> DocumentWrapper { .regularFile(Data(text.utf8)) }
///     override func load(fromContents contents: DocumentWrapper, ofType type: String?) throws {
///         text = String(decoding: contents.regularFileContents ?? Data(), as: UTF8.self)
///     }
/// }
/// ```
/// `load` and `contents` run on a thread of their own: guard the subclass's state as a `Sendable` class must.
open class Document: FilePresenter, @unchecked Sendable {
    /// `UIDocument.State`.
    public struct State: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let normal: State = []
        public static let closed = State(rawValue: 1 << 0)
        public static let inConflict = State(rawValue: 1 << 1)
        public static let savingError = State(rawValue: 1 << 2)
        public static let editingDisabled = State(rawValue: 1 << 3)
        public static let progressAvailable = State(rawValue: 1 << 4)

        public var description: String {
            let names: [(State, String)] = [
                (.closed, "closed"), (.inConflict, "inConflict"), (.savingError, "savingError"),
                (.editingDisabled, "editingDisabled"), (.progressAvailable, "progressAvailable"),
            ]
            let set = names.filter { contains($0.0) }.map(\.1)
            return set.isEmpty ? "normal" : set.joined(separator: "+")
        }
    }

    public enum SaveOperation: Sendable {
        /// A new file: refused if something is at the URL already.
        case forCreating
        case forOverwriting
    }

    /// `UIDocument.ChangeKind`.
    public enum ChangeKind: Sendable {
        case done, undone, redone, cleared
    }

    private let lock = NSLock()
    private var url: URL
    private var state: State = .closed
    private var changeCount = 0
    private var autosaveTask: Task<Void, Never>?
    /// The reverts changes of the file started, one after another (`UIDocument` runs its file operations so):
    /// a close waits for them, or one still reading would mark the closed document `editingDisabled` and load
    /// into it.
    private var reverting: Task<Void, Never>?
    /// While `close()` runs: changes of the file start no revert.
    private var closing = false
    /// The file as this document last read or wrote it (inode, size, modification time), so its own saves
    /// are not taken for someone else's.
    private var known: FileIdentity?
    private let device: UbiquityDevice?
    private let continuation: AsyncStream<State>.Continuation

    /// Each new `documentState` (`UIDocument.stateChangedNotification`).
    public let stateChanges: AsyncStream<State>
    /// How long after a change it is saved on its own.
    public var autosaveInterval: Duration {
        get { lock.withLock { _autosaveInterval } }
        set { lock.withLock { _autosaveInterval = newValue } }
    }
    private var _autosaveInterval: Duration = .seconds(15)

    /// A closed document for the file at `url` (in a container folder of `device`, found from the URL if
    /// not given).
    public init(fileURL url: URL, device: UbiquityDevice? = nil) {
        self.url = url.standardizedFileURL
        self.device = device ?? UbiquityDevice.holding(url)
        (stateChanges, continuation) = AsyncStream.makeStream(of: State.self)
    }

    deinit {
        autosaveTask?.cancel()
        continuation.finish()
    }

    public var fileURL: URL { lock.withLock { url } }
    public var presentedItemURL: URL? { fileURL }
    /// The name's extension (`UIDocument.fileType` is its type identifier).
    public var fileType: String? { fileURL.pathExtension.isEmpty ? nil : fileURL.pathExtension }
    public var documentState: State { lock.withLock { state } }
    public var hasUnsavedChanges: Bool { lock.withLock { changeCount != 0 } }

    // MARK: - For subclasses

    /// Takes the document's contents as read from its file.
    open func load(fromContents contents: DocumentWrapper, ofType typeName: String?) throws {}

    /// The contents to write to its file.
    open func contents(forType typeName: String?) throws -> DocumentWrapper { .regularFile(Data()) }

    /// Called when saving failed (the state says `savingError` until a save succeeds).
    open func handleError(_ error: any Error) {}

    // MARK: - Lifecycle

    /// Reads the file (downloading it first if only its placeholder is here) and opens the document.
    public func open() async throws {
        let url = fileURL
        if let device, FileCoordinator.isEvicted(url) {
            set(adding: .progressAvailable)
            defer { set(removing: .progressAvailable) }
            try await device.startDownloadingUbiquitousItem(at: url)
        }
        try await read()
        FileCoordinator.addFilePresenter(self)
        set(removing: .closed)
        await refreshConflicts()
    }

    /// Saves unsaved changes, then closes.
    public func close() async throws {
        cancelAutosave()
        let pending = lock.withLock {
            closing = true
            return reverting
        }
        defer { lock.withLock { closing = false } }
        await pending?.value
        if hasUnsavedChanges { try await save(to: fileURL, for: .forOverwriting) }
        FileCoordinator.removeFilePresenter(self)
        set(adding: .closed)
    }

    /// Writes the document's contents to `url` in one step (a new file renamed into place, so no reader
    /// sees half of it) under a coordinated write; the document's file becomes `url`.
    public func save(to target: URL, for operation: SaveOperation) async throws {
        let target = target.standardizedFileURL
        let saved = lock.withLock { changeCount }
        // A save opens a closed document; one still under way when `close()` runs leaves it closed.
        let opening = documentState.contains(.closed)
        do {
            let staging = temporaryURL(beside: target)
            let type = fileType
            // On the coordinator's thread: the subclass's contents, written whole, then renamed into place.
            let identity = try await FileCoordinator(filePresenter: self, device: device).coordinate(writingItemAt: target) {
                target in
                defer { try? FileManager.default.removeItem(at: staging) }
                try self.contents(forType: type).write(to: staging)
                try Self.place(staging, at: target, creating: operation == .forCreating)
                return FileIdentity(target)
            }
            lock.withLock {
                url = target
                known = identity
                changeCount -= saved
            }
            if operation == .forCreating { FileCoordinator.addFilePresenter(self) }
            set(removing: opening ? [.savingError, .closed] : .savingError)
        } catch {
            set(adding: .savingError)
            handleError(error)
            throw error
        }
    }

    /// Notes a change (or an undo, a redo, or that all is saved); after a change the document saves itself
    /// within `autosaveInterval`.
    public func updateChangeCount(_ change: ChangeKind) {
        let schedule: Duration? = lock.withLock {
            switch change {
            case .done, .redone: changeCount += 1
            case .undone: changeCount -= 1
            case .cleared: changeCount = 0
            }
            guard changeCount != 0, autosaveTask == nil else { return nil }
            return _autosaveInterval
        }
        guard let schedule else { return }
        let task = Task { [weak self] in
            try? await Task.sleep(for: schedule)
            guard let self, !Task.isCancelled else { return }
            self.lock.withLock { self.autosaveTask = nil }
            try? await self.autosave()
        }
        lock.withLock { autosaveTask = task }
    }

    /// Saves now if there are unsaved changes.
    public func autosave() async throws {
        guard hasUnsavedChanges, !documentState.contains(.closed) else { return }
        try await save(to: fileURL, for: .forOverwriting)
    }

    // MARK: - Presenting the file

    public func presentedItemDidChange() {
        guard !documentState.contains(.closed), !hasUnsavedChanges else { return }
        let url = fileURL
        guard FileIdentity(url) != lock.withLock({ known }), FileManager.default.fileExists(atPath: url.path) else { return }
        lock.withLock {
            guard !closing else { return }
            let previous = reverting
            reverting = Task {
                await previous?.value
                try? await self.revert()
            }
        }
    }

    public func presentedItemDidMove(to newURL: URL) { lock.withLock { url = newURL.standardizedFileURL } }

    public func accommodatePresentedItemDeletion() {
        cancelAutosave()
        FileCoordinator.removeFilePresenter(self)
        set(adding: .closed)
    }

    public func presentedItemDidGain(_ version: FileVersion) { set(adding: .inConflict) }

    public func presentedItemDidResolveConflict(_ version: FileVersion) { Task { await refreshConflicts() } }

    /// Reads the file again, editing disabled meanwhile (`UIDocument.revert(toContentsOf:)`).
    public func revert() async throws {
        set(adding: .editingDisabled)
        defer { set(removing: .editingDisabled) }
        try await read()
    }

    // MARK: - Internals

    private func cancelAutosave() {
        lock.withLock {
            autosaveTask?.cancel()
            autosaveTask = nil
        }
    }

    private func read() async throws {
        let url = fileURL
        let type = fileType
        // On the coordinator's thread: read whole, handed to the subclass.
        let identity = try await FileCoordinator(filePresenter: self, device: device).coordinate(readingItemAt: url) { url in
            let identity = FileIdentity(url)
            try self.load(fromContents: try DocumentWrapper(contentsOf: url), ofType: type)
            return identity
        }
        lock.withLock {
            known = identity
            changeCount = 0
        }
    }

    private func refreshConflicts() async {
        guard device != nil, let conflicts = try? await FileVersion.unresolvedConflictVersionsOfItem(at: fileURL) else {
            return
        }
        if conflicts.isEmpty { set(removing: .inConflict) } else { set(adding: .inConflict) }
    }

    private func set(adding: State = [], removing: State = []) {
        let changed: State? = lock.withLock {
            let before = state
            state.subtract(removing)
            state.formUnion(adding)
            return state == before ? nil : state
        }
        if let changed { continuation.yield(changed) }
    }

    /// Where a save is written before it is renamed into place: the device's own folder (the daemon never
    /// syncs it nor clears it mid-save), else beside the file under a name the daemon skips.
    private func temporaryURL(beside target: URL) -> URL {
        let name = DocumentNames.temporaryPrefix + "save-" + UUIDString.random()
        guard let device else { return target.deletingLastPathComponent().appendingPathComponent(name) }
        return device.root.appendingPathComponent(".nimbus").appendingPathComponent(name)
    }

    /// Renames the staged contents into place: a new name only when creating; a package swapped whole.
    private static func place(_ staging: URL, at target: URL, creating: Bool) throws {
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: target.path, isDirectory: &isFolder)
        if creating || !exists {
            guard nimbus_rename_noreplace(staging.path, target.path) == 0 else {
                throw errno == EEXIST
                    ? NimbusError(.exists, "\(target.path) exists already")
                    : NimbusError(.internalError, "cannot save \(target.path): \(String(cString: strerror(errno)))")
            }
        } else if isFolder.boolValue {
            // The old package ends up at the staging name, removed by the caller.
            guard nimbus_rename_exchange(staging.path, target.path) == 0 else {
                throw NimbusError(.internalError, "cannot save \(target.path): \(String(cString: strerror(errno)))")
            }
        } else {
            guard rename(staging.path, target.path) == 0 else {
                throw NimbusError(.internalError, "cannot save \(target.path): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// Which file is at a path, and whether it was written since: inode, size and modification time.
struct FileIdentity: Hashable, Sendable {
    var inode: UInt64
    var size: Int64
    var modified: Int64

    init?(_ url: URL) {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }
}
