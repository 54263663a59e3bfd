import Foundation
import NimbusCore

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
}

/// A request on the control socket: one JSON object on one line.
package struct ControlRequest: Codable, Sendable {
    package enum Command: String, Codable, Sendable { case status, download, evict }
    package var command: Command
    /// Absolute, or relative to the container's folder; nil asks about the folder as a whole.
    package var path: String?

    package init(command: Command, path: String? = nil) {
        self.command = command
        self.path = path
    }
}

package struct ControlResponse: Codable, Sendable {
    /// Each container folder of the root, when the request named no path.
    package var folders: [FolderStatus]?
    package var item: ItemStatus?
    package var error: String?

    package init(folders: [FolderStatus]? = nil, item: ItemStatus? = nil, error: String? = nil) {
        self.folders = folders
        self.item = item
        self.error = error
    }
}

/// Answers the control socket: status from what the engine is doing (`SyncActivity`) and what the
/// journal holds; downloads and evictions through the engine.
package struct DeviceControl: Sendable {
    let engine: SyncEngine
    let activity: SyncActivity
    let journal: DeviceJournal
    package let folder: URL
    let container: String
    /// Called after a download or eviction, so the daemon runs a round and the activity catches up.
    let changed: @Sendable () -> Void

    package init(engine: SyncEngine, container: String, changed: @escaping @Sendable () -> Void = {}) {
        self.engine = engine
        self.activity = engine.activity
        self.journal = engine.journal
        self.folder = engine.folder.standardizedFileURL
        self.container = container
        self.changed = changed
    }

    package func answer(_ request: ControlRequest) async -> ControlResponse {
        do {
            let relative = try request.path.map(relative)
            guard let relative, !relative.isEmpty else {
                guard request.command == .status else { throw NimbusError.badRequest("\(request.command.rawValue) needs a file") }
                return ControlResponse(folders: [try await folderStatus()])
            }
            switch request.command {
            case .status: break
            case .download: try await engine.download(relative)
            case .evict: try await engine.evict(relative)
            }
            if request.command != .status { changed() }
            return ControlResponse(item: try await status(of: relative))
        } catch let error as NimbusError {
            return ControlResponse(error: error.reason)
        } catch {
            return ControlResponse(error: "\(error)")
        }
    }

    func folderStatus() async throws -> FolderStatus {
        let summary = await activity.summary()
        return FolderStatus(
            folder: folder.path, container: container, pending: summary.pending, refused: summary.refused,
            conflicts: try await journal.conflictCount(), problem: summary.error.map(Self.describe),
            offline: summary.error?.code == .networkUnavailable, lastSyncedAt: summary.lastRoundEnded?.milliseconds)
    }

    /// `path` relative to the container's folder, refusing one outside it.
    func relative(_ path: String) throws -> String {
        guard path.hasPrefix("/") else { return path.trimmingCharacters(in: CharacterSet(charactersIn: "/")) }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        if absolute == folder.path { return "" }
        guard absolute.hasPrefix(folder.path + "/") else {
            throw NimbusError.badRequest("\(path) is not inside \(folder.path)")
        }
        return String(absolute.dropFirst(folder.path.count + 1))
    }

    func status(of path: String) async throws -> ItemStatus {
        let components = path.split(separator: "/").map(String.init)
        if let excluded = components.first(where: {
            DocumentNames.isExcludedFromSync($0) || $0.hasPrefix(DocumentNames.temporaryPrefix)
        }) {
            return ItemStatus(
                path: path, state: .excluded,
                reason: DocumentNames.isExcludedFromSync(excluded)
                    ? "excluded: names ending in .nosync are not synced" : "excluded: a temporary file of the daemon")
        }
        for component in components {
            do {
                try DocumentNames.validate(component)
            } catch {
                return ItemStatus(path: path, state: .nameInvalid, reason: "cannot sync this name: \(error.reason)")
            }
        }
        let summary = await activity.summary()
        guard let id = await activity.item(at: path) else {
            guard FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).path) else {
                return ItemStatus(path: path, state: .notFound, reason: "no such item on this device or the server")
            }
            return summary.error?.code == .networkUnavailable
                ? ItemStatus(path: path, state: .waitingForNetwork, reason: "waiting for the network: new on this device")
                : ItemStatus(path: path, state: .queued, reason: "queued: new on this device, not scanned yet")
        }
        let remote = try await journal.remoteItem(id)
        let issues = remote?.nameIssues ?? DocumentNames.portabilityIssues(components.last ?? "")
        func status(_ state: ItemStatus.State, _ reason: String, _ percent: Double? = nil) -> ItemStatus {
            ItemStatus(path: path, state: state, reason: reason, percentDone: percent, nameIssues: issues)
        }
        if let refusal = await activity.refusal(of: id) {
            return refusal.code == .quotaExceeded
                ? status(.overQuota, "over quota: \(refusal.reason)")
                : status(.refused, "the server refused it: \(refusal.reason)")
        }
        if let work = await activity.work(of: id) {
            if let progress = await activity.transfer(of: id) {
                let percent = progress.total == 0 ? 100 : 100 * Double(progress.done) / Double(progress.total)
                let uploading = work == .upload
                return status(
                    uploading ? .uploading : .downloading,
                    String(format: "%@ %.0f%%", uploading ? "uploading" : "downloading", percent), percent)
            }
            if let error = summary.error {
                if error.code == .networkUnavailable { return status(.waitingForNetwork, "waiting for the network") }
                if error.code == .quotaExceeded { return status(.overQuota, "over quota: \(error.reason)") }
            }
            return status(.queued, "queued: \(Self.describe(work))")
        }
        if let remote, !remote.conflicts.isEmpty {
            let count = remote.conflicts.count
            return status(
                .conflict, "in conflict: \(count) unresolved conflict version\(count == 1 ? "" : "s") (nimbus docs conflicts)")
        }
        let elsewhere = issues.isEmpty ? "" : "; its name is not valid on \(issues.joined(separator: ", "))"
        let stub = folder.appendingPathComponent(Placeholder.path(for: path)).path
        if !FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).path),
            FileManager.default.fileExists(atPath: stub)
        {
            return status(.notDownloaded, "synced, not downloaded (nimbus docs download)" + elsewhere)
        }
        return status(.synced, "synced" + elsewhere)
    }

    static func describe(_ work: SyncActivity.Work) -> String {
        switch work {
        case .upload: "to upload"
        case .download: "to download"
        case .moveOnServer: "to move on the server"
        case .moveOnDisk: "to move on this device"
        case .deleteOnServer: "to delete on the server"
        case .deleteOnDisk: "to delete on this device"
        }
    }

    static func describe(_ error: NimbusError) -> String {
        switch error.code {
        case .networkUnavailable: "offline: waiting for the server (\(error.reason))"
        case .quotaExceeded: "over quota: \(error.reason)"
        default: error.reason
        }
    }
}
