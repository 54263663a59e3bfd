import Foundation
import NimbusCore

/// The device's ubiquity containers as an app sees them (`FileManager`'s iCloud calls): the folders the
/// device daemon (`nimbus device run --root ROOT`, or one embedded in the app) keeps in sync under `root`,
/// and the calls that download, evict, and move items in and out of them.
///
/// ```swift
/// let device = UbiquityDevice(root: root, containers: ["iCloud.com.example.notes"])
/// guard let container = await device.ubiquityContainerURL(forIdentifier: nil) else { return }  // signed out
/// let documents = container.appendingPathComponent("Documents")
/// ```
public struct UbiquityDevice: Sendable, Hashable {
    /// The folder the daemon was started on.
    public let root: URL
    /// The app's container identifiers (its entitlements), the first being its own; empty: any the daemon keeps.
    public let containers: [String]

    public init(root: URL, containers: [String] = []) {
        self.root = URL(fileURLWithPath: root.path).standardizedFileURL
        self.containers = containers
    }

    /// The device at `NIMBUS_DEVICE_ROOT`, else `~/Nimbus`.
    public static var `default`: UbiquityDevice {
        let path = ProcessInfo.processInfo.environment["NIMBUS_DEVICE_ROOT"] ?? NSHomeDirectory() + "/Nimbus"
        return UbiquityDevice(root: URL(fileURLWithPath: path))
    }

    /// How long `ubiquityContainerURL` waits for a daemon's first round over a container it just began keeping.
    static let firstRoundWait: Duration = .seconds(10)

    /// The container's local folder (`FileManager.url(forUbiquityContainerIdentifier:)`), or nil when no
    /// daemon serves the root, the app is not entitled to the container, or the device does not keep it (signed
    /// out, no token for it). `nil` asks for the app's first container. The first time, it waits (a few
    /// seconds at most) for the daemon's first round, so the folder holds what the server has.
    public func ubiquityContainerURL(forIdentifier identifier: String?) async -> URL? {
        await containerFolder(identifier, waitingForFirstRound: true)
    }

    /// The container's folder, once the daemon's first round over it is done if `waiting` (at most
    /// `firstRoundWait`).
    func containerFolder(_ identifier: String?, waitingForFirstRound waiting: Bool) async -> URL? {
        let wanted = identifier ?? containers.first
        if let wanted, !containers.isEmpty, !containers.contains(wanted) { return nil }
        let deadline = ContinuousClock.now + (waiting ? Self.firstRoundWait : .zero)
        while true {
            guard let folders = try? await DaemonConnection.request(ControlRequest(command: .status), root: root).folders,
                let folder = folders.first(where: { wanted == nil || $0.container == wanted })
            else { return nil }
            let ready = folder.lastSyncedAt != nil || folder.offline || folder.problem != nil
            if ready || ContinuousClock.now >= deadline { return URL(fileURLWithPath: folder.folder, isDirectory: true) }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Whether `url` is inside one of the device's container folders.
    public func isUbiquitousItem(at url: URL) -> Bool {
        url.standardizedFileURL.path.hasPrefix(root.appendingPathComponent("Mobile Documents").path + "/")
    }

    /// Downloads the item's latest version in place of its placeholder; returns once it is on the disk.
    public func startDownloadingUbiquitousItem(at url: URL) async throws {
        _ = try await DaemonConnection.request(
            ControlRequest(command: .download, path: url.standardizedFileURL.path), root: root, timeout: 3600)
    }

    /// Removes the item's bytes from this device, leaving a placeholder; refused while it has changes not
    /// uploaded yet.
    public func evictUbiquitousItem(at url: URL) async throws {
        _ = try await DaemonConnection.request(
            ControlRequest(command: .evict, path: url.standardizedFileURL.path), root: root, timeout: 600)
    }

    /// Moves a local item into a container (`flag` true: it is then synced) or out of one (false: it is
    /// deleted from the container on every device), through file coordination.
    public func setUbiquitous(_ flag: Bool, itemAt url: URL, destinationURL destination: URL) async throws {
        guard flag == isUbiquitousItem(at: destination), flag != isUbiquitousItem(at: url) else {
            throw NimbusError.badRequest(
                flag
                    ? "\(destination.path) must be inside a container folder and \(url.path) outside"
                    : "\(url.path) must be inside a container folder and \(destination.path) outside")
        }
        guard !FileManager.default.fileExists(atPath: destination.path) else {
            throw NimbusError(.exists, "\(destination.path) exists already")
        }
        try await FileCoordinator(device: self).coordinate(movingItemAt: url, to: destination) { from, to in
            do {
                try FileManager.default.moveItem(at: from, to: to)
            } catch {
                throw NimbusError(.internalError, "cannot move \(from.path) to \(to.path): \(error.localizedDescription)")
            }
        }
    }
}
