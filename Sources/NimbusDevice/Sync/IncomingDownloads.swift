import Foundation
import NimbusCore
import NimbusKit
import Synchronization

/// Large files another of the account's devices is still uploading, downloaded while it uploads them.
///
/// The uploading device announces each run of chunks the server has made durable (`ChunksAnnouncement`,
/// over the push socket); each announcement extends the item's `LargeDownload`, which runs until it has
/// written what is known. When the version is saved and a round downloads it, the round takes the download
/// over (`take`) with most of its chunks written, rather than starting once the upload has ended: upload and
/// download overlap instead of following each other.
///
/// Announcements are hints. One that disagrees with what is known (the file changed while it was sent) starts
/// the item over; one joining midway is ignored; a download no round takes is removed after `idleLimit`; the
/// round checks every chunk and the whole file against the saved version as it always does.
final class IncomingDownloads: Sendable {
    private let folder: URL
    private let client: DocumentClient
    private let journal: DeviceJournal
    private let downloads = Mutex<[ItemID: Incoming]>([:])

    /// How long a download no announcement extends is kept for a round to take over.
    static let idleLimit = Duration.seconds(60)
    /// Files downloaded ahead at once; announcements of more are ignored (their rounds download them).
    static let maxFiles = 4

    private struct Incoming {
        let download: LargeDownload
        var worker: Task<Void, Never>?
        var heard: ContinuousClock.Instant
    }

    init(folder: URL, client: DocumentClient, journal: DeviceJournal) {
        self.folder = folder
        self.client = client
        self.journal = journal
    }

    /// The names of the files being downloaded, which a round's clean-up of temporary files must leave: every
    /// file created before this is read is among them while its download lasts.
    var fileNames: Set<String> { downloads.withLock { Set($0.values.map(\.download.file.lastPathComponent)) } }

    /// Adds an announcement's chunks to its item's download, starting one when the announcement begins the
    /// version. Call in the order announcements arrive.
    func announced(_ announcement: ChunksAnnouncement) async {
        let (id, now) = (ItemID(announcement.itemID), ContinuousClock.now)
        removeIdle(now: now)
        let known = downloads.withLock { $0[id]?.download }
        if let known, known.extend(announcement.chunks, from: announcement.from) {
            downloads.withLock { $0[id]?.heard = now }
        } else {
            if known != nil { retire(id) }
            guard announcement.from == 0, downloads.withLock({ $0.count }) < Self.maxFiles else { return }
            // The item's version on disk, when this device has one, holds most of an edited file's chunks.
            var held: LocalChunks?
            if let file = try? await journal.localFile(id), file.contentKey != nil {
                held = await LocalChunks(of: folder.appendingPathComponent(file.path), wanted: nil)
            }
            // Its file is created and listed together, so a round cleaning up temporary files either sees it
            // listed or does not see it at all.
            let (folder, client) = (folder, client)
            let (created, replaced) = downloads.withLock { downloads -> (Bool, Incoming?) in
                guard let download = try? LargeDownload(id, into: folder, client: client, held: held) else { return (false, nil) }
                _ = download.extend(announcement.chunks, from: 0)
                defer { downloads[id] = Incoming(download: download, heard: now) }
                return (true, downloads[id])
            }
            if let replaced { retire(replaced) }
            guard created else { return }
        }
        start(id)
    }

    /// The item's download, taken over by the round downloading `content`, once what was announced is
    /// written; nil when there is none, it failed, or it is not the beginning of `content`.
    func take(_ id: ItemID, for content: DocumentContent) async -> LargeDownload? {
        guard let incoming = downloads.withLock({ $0.removeValue(forKey: id) }) else { return nil }
        let download = incoming.download
        guard content.chunks.starts(with: download.chunks) else {
            retire(incoming)
            return nil
        }
        await incoming.worker?.value
        guard download.written == download.chunks.count, download.extend(content.chunks, from: 0),
            download.chunks.count == content.chunks.count
        else {
            download.discard()
            return nil
        }
        return download
    }

    /// Downloads the item's known chunks unless that already runs; runs again when more were announced meanwhile.
    private func start(_ id: ItemID) {
        downloads.withLock { downloads in
            guard let incoming = downloads[id], incoming.worker == nil else { return }
            let download = incoming.download
            downloads[id]?.worker = Task { await DeviceExecutor.run { await self.drain(id, download) } }
        }
    }

    private func drain(_ id: ItemID, _ download: LargeDownload) async {
        while true {
            do {
                try await download.run(activity: nil)
            } catch {
                // Offline, or the chunks went: the round downloads what it needs.
                let ours = downloads.withLock { downloads in
                    guard downloads[id]?.download === download else { return false }
                    downloads[id] = nil
                    return true
                }
                // A download taken over or retired meanwhile is its new owner's to remove.
                if ours { download.discard() }
                return
            }
            let done = downloads.withLock { downloads in
                guard download.written == download.chunks.count else { return false }
                if downloads[id]?.download === download { downloads[id]?.worker = nil }
                return true
            }
            if done { return }
        }
    }

    private func retire(_ id: ItemID) {
        if let incoming = downloads.withLock({ $0.removeValue(forKey: id) }) { retire(incoming) }
    }

    /// Stops a download no round will take and removes its file once it has stopped writing.
    private func retire(_ incoming: Incoming) {
        guard let worker = incoming.worker else { return incoming.download.discard() }
        worker.cancel()
        Task {
            await worker.value
            incoming.download.discard()
        }
    }

    /// Removes the downloads no announcement extended for `idleLimit` (the version was never saved, or was
    /// saved while this device was away).
    func removeIdle(now: ContinuousClock.Instant = .now) {
        let idle = downloads.withLock { downloads in
            let idle = downloads.filter { now - $0.value.heard > Self.idleLimit && $0.value.worker == nil }
            for id in idle.keys { downloads[id] = nil }
            return idle.values
        }
        for incoming in idle { incoming.download.discard() }
    }
}
