import Foundation
import NimbusCore

/// Coordinated access to items of a ubiquity container (`NSFileCoordinator`), between the apps of a device
/// and its sync daemon: a coordinated read never sees a file half written by a coordinated writer or by a
/// download, and a coordinated write is never overwritten by a download in flight (the daemon places a
/// download under the same lock, and only over the file it scanned).
///
/// Across processes it uses file locks (`CoordinationLock`), not requests to the daemon: the kernel
/// drops a dead process's locks, so a crash never leaves an item locked; they cost no round trip; and
/// they keep working while the daemon restarts. Presenters hear of other processes' changes through the
/// daemon (`FilePresenter`); of this process's coordinated writes at once.
///
/// ```swift
/// let text = try await FileCoordinator().coordinate(readingItemAt: url) { try String(contentsOf: $0) }
/// ```
public struct FileCoordinator: Sendable {
    public struct ReadingOptions: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Do not download a file that is only a placeholder.
        public static let immediatelyAvailableMetadataOnly = ReadingOptions(rawValue: 1)
    }

    public struct WritingOptions: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The writer deletes the item: presenters hear of a deletion.
        public static let forDeleting = WritingOptions(rawValue: 1)
        /// The writer replaces the item whole.
        public static let forReplacing = WritingOptions(rawValue: 2)
    }

    private let presenter: (any FilePresenter)?
    private let device: UbiquityDevice?

    /// A coordinator acting for `presenter` (it does not hear of its own writes); the device is the one
    /// whose root holds the item, unless given.
    public init(filePresenter presenter: (any FilePresenter)? = nil, device: UbiquityDevice? = nil) {
        self.presenter = presenter
        self.device = device
    }

    /// Runs `reader` while no coordinated writer writes the item or a folder above it. A placeholder is
    /// downloaded first (unless `options` says not to).
    public func coordinate<T: Sendable>(
        readingItemAt url: URL, options: ReadingOptions = [], _ reader: @escaping @Sendable (URL) throws -> T
    ) async throws -> T {
        let url = url.standardizedFileURL
        let device = device ?? UbiquityDevice.holding(url)
        if let device, !options.contains(.immediatelyAvailableMetadataOnly), Self.isEvicted(url) {
            try await device.startDownloadingUbiquitousItem(at: url)
        }
        return try await locked(device, [(url.path, false)]) { try reader(url) }
    }

    /// Runs `writer` while no one else reads or writes the item or writes a folder above it; then tells
    /// presenters and the daemon.
    public func coordinate<T: Sendable>(
        writingItemAt url: URL, options: WritingOptions = [], _ writer: @escaping @Sendable (URL) throws -> T
    ) async throws -> T {
        let url = url.standardizedFileURL
        let device = device ?? UbiquityDevice.holding(url)
        let result = try await locked(device, [(url.path, true)]) { try writer(url) }
        if options.contains(.forDeleting) {
            PresenterRegistry.shared.announce(.deleted(url), except: presenter)
        } else {
            PresenterRegistry.shared.announce(.changed(url), except: presenter)
        }
        if let device { Self.touch(url, device) }
        return result
    }

    /// Moves an item (`mover` does it) while both places are locked for writing; presenters of the item
    /// hear where it went.
    public func coordinate(
        movingItemAt source: URL, to destination: URL, _ mover: @escaping @Sendable (URL, URL) throws -> Void
    ) async throws {
        let (source, destination) = (source.standardizedFileURL, destination.standardizedFileURL)
        let device = device ?? UbiquityDevice.holding(source) ?? UbiquityDevice.holding(destination)
        try await locked(device, [(source.path, true), (destination.path, true)]) { try mover(source, destination) }
        PresenterRegistry.shared.announce(.moved(source, to: destination), except: presenter)
        if let device {
            Self.touch(source, device)
            Self.touch(destination, device)
        }
    }

    /// Registers a presenter: it hears of changes to its item made by other coordinators of this process
    /// and, through the daemon, by other processes and devices.
    public static func addFilePresenter(_ presenter: any FilePresenter) { PresenterRegistry.shared.add(presenter) }

    public static func removeFilePresenter(_ presenter: any FilePresenter) { PresenterRegistry.shared.remove(presenter) }

    /// Runs `body` on a thread of its own holding the locks (waiting for them blocks that thread, never
    /// the cooperative pool).
    private func locked<T: Sendable>(
        _ device: UbiquityDevice?, _ accesses: [(String, Bool)], _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        guard let device else { return try body() }
                        let lock = try CoordinationLock(
                            root: device.root, accesses: accesses.map { (path: $0.0, exclusive: $0.1) })
                        return try withExtendedLifetime(lock) { try body() }
                    })
            }
        }
    }

    /// Whether only the item's placeholder is on the disk.
    static func isEvicted(_ url: URL) -> Bool {
        let placeholder = url.deletingLastPathComponent().appendingPathComponent("." + url.lastPathComponent + ".icloud")
        return !FileManager.default.fileExists(atPath: url.path) && FileManager.default.fileExists(atPath: placeholder.path)
    }

    /// Tells the daemon an item was written, so it syncs now instead of when inotify's event arrives.
    private static func touch(_ url: URL, _ device: UbiquityDevice) {
        let socket = DaemonConnection.socketPath(root: device.root)
        Thread.detachNewThread { _ = try? DaemonConnection.ask(ControlRequest(command: .touched, path: url.path), at: socket) }
    }
}

extension UbiquityDevice {
    /// The device whose root holds `url` (the folder above it with a daemon's control socket), if any.
    static func holding(_ url: URL) -> UbiquityDevice? {
        var folder = url.standardizedFileURL.deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: DaemonConnection.socketPath(root: folder).path) {
                return UbiquityDevice(root: folder)
            }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }
}
