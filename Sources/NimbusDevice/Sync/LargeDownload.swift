import Foundation
import NIOCore
import NimbusCore
import NimbusKit
import Synchronization

/// A large file's version downloaded into a `VersionFile` chunk by chunk, in order, with up to
/// `SyncEngine.largeFileChunksInFlight` chunks downloading ahead of the write: one after another, each
/// waiting out its round trip, they held the download to a fraction of what the link and disk move. Chunks
/// a file this device holds (`held`, the item's version on disk) are taken from it instead, checked again as
/// they are taken; one that changed since is downloaded after all.
///
/// Its chunk list may grow while it runs: another device's announcements (`IncomingDownloads`) start the
/// download before the version is saved, and the round that downloads the version takes it over.
final class LargeDownload: Sendable {
    let item: ItemID
    let file: URL
    private let client: DocumentClient
    private let held: LocalChunks?
    private let known = Mutex<[DocumentChunk]>([])
    private let output: Mutex<VersionFile>
    /// Buffers of chunks written, each filled again by a download: a fresh one is mapped afresh (blocks this
    /// large are), and its pages' first touches cost a 256 MB file ~0.2 s of faults. Only downloaded chunks'
    /// buffers up to `SyncEngine.reusedBufferCapacity`: never more than were downloading at once.
    private let spare = Mutex<[ByteBuffer]>([])

    init(_ item: ItemID, into folder: URL, client: DocumentClient, held: LocalChunks?) throws {
        let output = try VersionFile(in: folder, writesBack: true)
        self.item = item
        self.file = output.url
        self.client = client
        self.held = held
        self.output = Mutex(output)
    }

    /// The version's chunks known so far.
    var chunks: [DocumentChunk] { known.withLock { $0 } }
    /// How many of them are written.
    var written: Int { output.withLock { $0.count } }
    /// The bytes of the chunks written.
    var writtenBytes: Int64 {
        let count = written
        return chunks.prefix(count).reduce(0) { $0 + $1.size }
    }

    /// Adds chunks from position `from` of the version's list; false when they disagree with the chunks
    /// known or would leave a gap (nothing is added then).
    func extend(_ more: [DocumentChunk], from: Int) -> Bool {
        known.withLock { known in
            guard from >= 0, from <= known.count else { return false }
            let overlap = min(known.count - from, more.count)
            guard known[from..<(from + overlap)].elementsEqual(more[..<overlap]) else { return false }
            known.append(contentsOf: more[overlap...])
            return true
        }
    }

    /// Downloads and writes the known chunks not yet written, those added meanwhile too.
    func run(activity: SyncActivity?) async throws {
        let (client, held, item) = (client, held, item)
        try await withThrowingTaskGroup(of: (Int, ByteBuffer).self) { group in
            var (requested, ahead) = (written, 0)
            var arrived: [Int: ByteBuffer] = [:]
            while true {
                try Task.checkCancellation()
                let (chunks, index) = (self.chunks, written)
                guard index < chunks.count else { break }
                while requested < chunks.count && ahead < SyncEngine.largeFileChunksInFlight {
                    if held?.holds(chunks[requested].hash) != true {
                        let (position, hash) = (requested, chunks[requested].hash)
                        group.addTask { (position, try await self.download(hash)) }
                        ahead += 1
                    }
                    requested += 1
                }
                let bytes: ByteBuffer
                // Only a downloaded chunk's buffer is filled again: one taken from a file this device holds is
                // of its own, and kept, the buffers of a file's held chunks would hold the whole file.
                var downloaded = false
                if held?.holds(chunks[index].hash) == true {
                    // Read again and checked when taken; changed since it was cut, it is downloaded after all.
                    if let local = held?.bytes(of: chunks[index].hash) {
                        bytes = local
                    } else {
                        bytes = try await client.download(chunk: chunks[index].hash)
                    }
                } else {
                    while arrived[index] == nil, let (position, data) = try await group.next() { arrived[position] = data }
                    guard let data = arrived.removeValue(forKey: index) else {
                        throw NimbusError(.internalError, "chunk \(chunks[index].hash) was never downloaded")
                    }
                    bytes = data
                    downloaded = true
                    ahead -= 1
                }
                try output.withLock { output in try bytes.withUnsafeReadableBytes { try output.append($0, as: chunks[index]) } }
                await activity?.moved(item, bytes: Int64(bytes.readableBytes))
                if downloaded && bytes.capacity <= SyncEngine.reusedBufferCapacity { spare.withLock { $0.append(bytes) } }
            }
        }
    }

    private func download(_ hash: String) async throws -> ByteBuffer {
        guard let buffer = spare.withLock({ $0.popLast() }) else { return try await client.download(chunk: hash) }
        return try await client.download(chunk: hash, into: consume buffer)
    }

    /// The file, once it holds exactly `content`; otherwise it is removed and this throws.
    func finish(_ content: DocumentContent) throws -> URL {
        try output.withLock { try $0.finish(content) }
    }

    func discard() { output.withLock { $0.discard() } }
}
