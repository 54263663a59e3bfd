import Foundation
import NimbusCore

/// A version of a container's item (`NSFileVersion`): the current one, unresolved conflict versions that
/// other devices saved beside it, and older versions in its history. Resolving a conflict version (on any
/// device) removes it from the item on every device; it stays in the item's history.
///
/// ```swift
/// for version in try await FileVersion.unresolvedConflictVersionsOfItem(at: url) {
///     try await version.replaceItem(at: url)  // keep the other device's version
///     try await version.resolve()
/// }
/// ```
public final class FileVersion: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The item's URL.
    public let url: URL
    public let persistentIdentifier: String
    /// When the saving device last modified it.
    public let modificationDate: Date
    /// The device that saved it (`localizedNameOfSavingComputer`).
    public let originatingDevice: String
    public let isConflict: Bool
    public let size: Int64
    private let role: VersionInfo.Role
    private let device: UbiquityDevice
    private let lock = NSLock()
    private var resolved = false
    private var failure: NimbusError?

    init(url: URL, info: VersionInfo, device: UbiquityDevice) {
        self.url = url
        self.persistentIdentifier = info.versionID
        self.modificationDate = Date(timeIntervalSince1970: Double(info.modifiedAt) / 1000)
        self.originatingDevice = info.device
        self.isConflict = info.role == .conflict
        self.size = info.size
        self.role = info.role
        self.device = device
    }

    public var description: String { "\(url.lastPathComponent) version \(persistentIdentifier) from \(originatingDevice)" }

    /// The version the item's file holds now.
    public static func currentVersionOfItem(at url: URL) async throws -> FileVersion? {
        try await versions(of: url).first { $0.role == .current }
    }

    /// Every version but the current one: unresolved conflict versions, then history, newest first.
    public static func otherVersionsOfItem(at url: URL) async throws -> [FileVersion] {
        try await versions(of: url).filter { $0.role != .current }
    }

    public static func unresolvedConflictVersionsOfItem(at url: URL) async throws -> [FileVersion] {
        try await versions(of: url).filter(\.isConflict)
    }

    /// Resolves every unresolved conflict version of the item. (History versions expire on the server after
    /// its retention period; they cannot be removed one by one.)
    public static func removeOtherVersionsOfItem(at url: URL) async throws {
        let conflicts = try await unresolvedConflictVersionsOfItem(at: url)
        guard let first = conflicts.first else { return }
        try await first.resolve(conflicts)
    }

    /// Whether this conflict version is resolved. Setting it to true marks it so at once and resolves it on the
    /// server (and so on every device) in the background, as `NSFileVersion` does; if that fails it is false
    /// again and `resolutionError` says why. `resolve()` waits for the server, for code that can await.
    public var isResolved: Bool {
        get { lock.withLock { !isConflict || resolved } }
        set {
            guard newValue, isConflict else { return }
            let started: Bool = lock.withLock {
                guard !resolved else { return false }
                (resolved, failure) = (true, nil)
                return true
            }
            guard started else { return }
            // Not waited for here: a setter blocking its thread could hold the last of Swift's cooperative threads
            // that a daemon embedded in the app needs to answer.
            Task.detached { [self] in
                do {
                    try await resolve()
                } catch {
                    lock.withLock {
                        resolved = false
                        failure = error as? NimbusError ?? NimbusError(.internalError, "\(error)")
                    }
                }
            }
        }
    }

    /// Why the last `isResolved = true` did not resolve it.
    public var resolutionError: NimbusError? { lock.withLock { failure } }

    /// Marks this conflict version resolved, here and on every device.
    public func resolve() async throws { try await resolve([self]) }

    /// Removes this version: a conflict version is resolved; history versions cannot be removed one by one.
    public func remove() async throws {
        guard isConflict else {
            throw NimbusError.badRequest("only conflict versions can be removed; history versions expire on the server")
        }
        try await resolve()
    }

    /// Writes this version's content over the item's file (a coordinated write), which then syncs as a new
    /// version; the URL of the item.
    @discardableResult public func replaceItem(at target: URL) async throws -> URL {
        let fetched = try await DaemonConnection.request(
            ControlRequest(command: .fetchVersion, path: url.path, versionIDs: [persistentIdentifier]), root: device.root,
            timeout: 3600)
        guard let file = fetched.file else { throw NimbusError(.internalError, "the daemon wrote no file") }
        let source = URL(fileURLWithPath: file)
        do {
            try await FileCoordinator(device: device).coordinate(writingItemAt: target, options: .forReplacing) { target in
                guard rename(source.path, target.path) == 0 else {
                    throw NimbusError(
                        .internalError, "cannot put the version at \(target.path): \(String(cString: strerror(errno)))")
                }
            }
        } catch {
            unlink(source.path)
            throw error
        }
        return target
    }

    public static func == (a: FileVersion, b: FileVersion) -> Bool {
        a.url == b.url && a.persistentIdentifier == b.persistentIdentifier
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(persistentIdentifier)
    }

    private func resolve(_ versions: [FileVersion]) async throws {
        _ = try await DaemonConnection.request(
            ControlRequest(command: .resolve, path: url.path, versionIDs: versions.map(\.persistentIdentifier)),
            root: device.root, timeout: 60)
        for version in versions { version.lock.withLock { version.resolved = true } }
    }

    private static func versions(of url: URL) async throws -> [FileVersion] {
        let url = url.standardizedFileURL
        guard let device = UbiquityDevice.holding(url) else {
            throw NimbusError.badRequest("\(url.path) is not in a folder a nimbus device daemon keeps")
        }
        let answer = try await DaemonConnection.request(ControlRequest(command: .versions, path: url.path), root: device.root)
        return (answer.versions ?? []).map { FileVersion(url: url, info: $0, device: device) }
    }
}
