import Foundation
import NimbusCore
import NimbusKit

/// Answers the control socket: status from what the engine is doing (`SyncActivity`) and what the
/// journal holds; downloads and evictions through the engine; apps' metadata queries from the
/// `MetadataIndex`; versions and their resolution through the server.
package struct DeviceControl: Sendable {
    let engine: SyncEngine
    let activity: SyncActivity
    let journal: DeviceJournal
    let index: MetadataIndex
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
        self.index = MetadataIndex(journal: engine.journal, activity: engine.activity, folder: engine.folder)
    }

    package func answer(_ request: ControlRequest) async -> ControlResponse {
        do {
            let relative = try request.path.map(relative)
            switch request.command {
            case .query: return ControlResponse(items: try await index.query(try Self.spec(of: request)))
            case .watch: throw NimbusError.badRequest("a watch is answered by watch(_:)")
            case .touched:
                changed()
                return ControlResponse()
            default: break
            }
            guard let relative, !relative.isEmpty else {
                guard request.command == .status else { throw NimbusError.badRequest("\(request.command.rawValue) needs a file") }
                return ControlResponse(folders: [try await folderStatus()])
            }
            switch request.command {
            case .download: try await engine.download(relative)
            case .evict: try await engine.evict(relative)
            case .versions: return ControlResponse(versions: try await versions(of: relative))
            case .resolve: try await resolve(relative, request.versionIDs ?? [])
            case .fetchVersion: return ControlResponse(file: try await fetch(relative, version: request.versionIDs?.first))
            case .status, .query, .watch, .touched: break
            }
            if request.command != .status { changed() }
            return ControlResponse(item: try await status(of: relative))
        } catch let error as NimbusError {
            return ControlResponse(error)
        } catch {
            return ControlResponse(error: "\(error)")
        }
    }

    /// A watch's first answer and the updates after it.
    package func watch(_ request: ControlRequest) async -> (ControlResponse, AsyncStream<ControlResponse>?) {
        do {
            let (items, updates) = try await index.watch(try Self.spec(of: request))
            return (ControlResponse(items: items), updates)
        } catch let error as NimbusError {
            return (ControlResponse(error), nil)
        } catch {
            return (ControlResponse(error: "\(error)"), nil)
        }
    }

    private static func spec(of request: ControlRequest) throws -> MetadataQuerySpec {
        guard let spec = request.query else { throw NimbusError.badRequest("\(request.command.rawValue) needs a query") }
        return spec
    }

    private func itemID(at path: String) async throws -> ItemID {
        guard let id = try await journal.itemID(atPath: path) else {
            throw NimbusError.notFound("\(path) is not an item the server has yet")
        }
        return id
    }

    /// The item's current version, its unresolved conflict versions, then its history, newest first.
    func versions(of path: String) async throws -> [VersionInfo] {
        let answer = try await engine.client.versions(of: try await itemID(at: path).rawValue)
        func info(_ version: DocumentVersion, _ role: VersionInfo.Role) -> VersionInfo {
            VersionInfo(
                versionID: version.versionID, role: role, size: version.content.size, modifiedAt: version.content.modifiedAt,
                savedAt: version.savedAt, device: version.device)
        }
        return (answer.item.current.map { [info($0, .current)] } ?? [])
            + answer.item.conflicts.sorted { $0.savedAt > $1.savedAt }.map { info($0, .conflict) }
            + answer.history.sorted { $0.savedAt > $1.savedAt }.map { info($0, .history) }
    }

    /// Resolves conflict versions on the server, and keeps its answer so apps see it at once.
    func resolve(_ path: String, _ versionIDs: [String]) async throws {
        guard !versionIDs.isEmpty else { throw NimbusError.badRequest("resolve names the conflict versions it resolves") }
        let id = try await itemID(at: path)
        let response = try await engine.client.modify([DocumentOperation(.resolve, itemID: id.rawValue, versionIDs: versionIDs)])
        guard let result = response.results.first else { throw NimbusError(.internalError, "the server answered nothing") }
        guard result.outcome == .applied, let item = result.item else {
            throw NimbusError(result.serverErrorCode ?? .conflict, result.reason ?? "the server did not resolve \(path)")
        }
        try await journal.storeRemoteItems([item])
    }

    /// Writes a version of the item into the device's own folder (beside the container folders, on the same
    /// file system, never synced) and returns where.
    func fetch(_ path: String, version versionID: String?) async throws -> String {
        let id = try await itemID(at: path)
        let answer = try await engine.client.versions(of: id.rawValue)
        let all = (answer.item.current.map { [$0] } ?? []) + answer.item.conflicts + answer.history
        guard let version = all.first(where: { $0.versionID == versionID }) else {
            throw NimbusError.notFound("\(path) has no version \(versionID ?? "(none named)")")
        }
        let root = folder.deletingLastPathComponent().deletingLastPathComponent()
        return try await engine.writeVersion(
            version.content, kind: answer.item.kind == .package ? .package : .file,
            into: root.appendingPathComponent(".nimbus")
        ).path
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
        guard let id = try await journal.itemID(atPath: path) else {
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
