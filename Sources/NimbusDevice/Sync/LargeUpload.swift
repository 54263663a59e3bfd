import Foundation
import NIOCore
import NimbusCore
import NimbusKit
import Synchronization

/// A large file's chunks stored on the server while the file is read once: every few chunks
/// (`SyncEngine.chunksPerQuestion`) the server is asked which it lacks, those are uploaded up to
/// `SyncEngine.largeFileChunksInFlight` at a time, and the chunks stored so far are announced to the other devices
/// (`ChunksAnnouncement`), which download them meanwhile.
///
/// The reading runs ahead of the uploads (`ReadAhead`), and each upload reads its chunk again, from the page
/// cache: the uploads wait mostly on the server's syncs, and a reader that waited with them left both cores idle
/// while the disk was busy. Bytes that changed after they were hashed no longer hash to their chunk's name, which
/// the server refuses (`chunkMismatch`): the file changed while it was sent (`ChangedWhileSent`).
///
/// A file still being written when the round began is read as it grows, to its end, and is then not the content
/// the round planned with. Its bytes are confirmed by reading it once more while the last uploads finish: the
/// file unchanged meanwhile and hashing to what was sent, the round saves it (`Stored.confirmed`) instead of
/// leaving it to the next round, which would read it again after the uploads.
package final class LargeUpload: Sendable {
    /// The file is not the one the round planned with, or changed while its chunks were read again.
    package struct ChangedWhileSent: Error {}

    /// What the upload stored: the file's SHA-256 and chunks as it was read.
    package struct Stored: Sendable {
        package var hash: String
        package var chunks: [DocumentChunk]
        /// When the file is not what the round planned with: its details while it held exactly these bytes,
        /// read again whole after it was sent; nil when it changed meanwhile, or is what was planned.
        package var confirmed: LocalScanner.Entry?
    }

    private let item: ItemID
    private let file: URL
    private let descriptor: Int32
    private let client: DocumentClient
    private let activity: SyncActivity
    /// Whether the file is still the one the round planned with, or that file grown; asked before each question.
    private let stillPlanned: @Sendable () -> Bool
    private let waiting = Mutex(Waiting())
    private let readAhead = ReadAhead(limit: SyncEngine.largeFileReadAhead)

    /// What the reader and the uploads tell the loop that owns the transfer's state (`run`).
    private enum Event: Sendable {
        /// Chunks read, in order, with their offsets: of those asked about, the ones the server holds and lacks.
        case asked([(offset: Int64, chunk: DocumentChunk)], held: Set<String>, missing: Set<String>)
        case uploaded(DocumentChunk)
        /// The whole file read: its SHA-256, and its details when it was confirmed (`Stored.confirmed`).
        case read(String, confirmed: LocalScanner.Entry?)
        case failed(any Error)
    }

    /// Chunks waiting for an upload, taken in order by up to `SyncEngine.largeFileChunksInFlight` uploaders, and
    /// the buffers uploaders leave behind.
    private struct Waiting {
        var chunks: [(offset: Int64, chunk: DocumentChunk)] = []
        var next = 0
        var uploaders = 0
        /// An uploader fills one buffer again chunk after chunk: a fresh one is mapped afresh (blocks this large
        /// are), and its pages' first touches cost a 256 MB file ~0.2 s of faults.
        var buffers: [ByteBuffer] = []

        /// Adds chunks; how many more uploaders to start.
        mutating func add(_ more: [(offset: Int64, chunk: DocumentChunk)]) -> Int {
            chunks += more
            let starting = max(0, min(SyncEngine.largeFileChunksInFlight - uploaders, chunks.count - next))
            uploaders += starting
            return starting
        }

        /// The next chunk to upload; nil when none waits, and the uploader asking ends.
        mutating func take() -> (offset: Int64, chunk: DocumentChunk)? {
            guard next < chunks.count else {
                uploaders -= 1
                return nil
            }
            defer { next += 1 }
            return chunks[next]
        }
    }

    /// Opens the file; throws `ChangedWhileSent` when it is gone.
    package init(
        _ item: ItemID, file: URL, client: DocumentClient, activity: SyncActivity,
        stillPlanned: @escaping @Sendable () -> Bool
    ) throws {
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ChangedWhileSent() }
        self.item = item
        self.file = file
        self.descriptor = descriptor
        self.client = client
        self.activity = activity
        self.stillPlanned = stillPlanned
    }

    deinit { close(descriptor) }

    /// Stores every chunk of the file on the server. All are announced when it hashes to `expected`, or was
    /// confirmed: the round saves that version next.
    package func run(expecting expected: String?) async throws -> Stored {
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // Before the group waits for its tasks: a reader waiting to read on must not wait for ever.
            defer {
                readAhead.close()
                sink.finish()
            }
            group.addTask { await self.read(expecting: expected, into: sink) }
            var chunks: [DocumentChunk] = []
            var held = Set<String>()
            var (queued, uploaded, announced) = (0, 0, 0)
            var finished: (hash: String, confirmed: LocalScanner.Entry?)?
            // A hint, so in order: a device that misses it downloads these chunks once the version is saved.
            func announce(all: Bool) async {
                var stored = announced
                while stored < chunks.count && held.contains(chunks[stored].hash) { stored += 1 }
                guard stored - announced >= (all ? 1 : SyncEngine.chunksPerAnnouncement) else { return }
                try? await Self.announce(item, chunks[announced..<stored], from: announced, client: client)
                announced = stored
            }
            for await event in events {
                switch event {
                case .asked(let read, let present, var missing):
                    var toSend: [(offset: Int64, chunk: DocumentChunk)] = []
                    var moved: Int64 = 0
                    for (offset, chunk) in read {
                        chunks.append(chunk)
                        if missing.remove(chunk.hash) != nil {
                            toSend.append((offset, chunk))
                            continue
                        }
                        readAhead.give(Int(chunk.size))
                        if present.contains(chunk.hash), held.insert(chunk.hash).inserted { moved += chunk.size }
                    }
                    queued += toSend.count
                    for _ in 0..<waiting.withLock({ $0.add(toSend) }) { group.addTask { await self.upload(into: sink) } }
                    await activity.moved(item, bytes: moved)
                case .uploaded(let chunk):
                    uploaded += 1
                    held.insert(chunk.hash)
                    readAhead.give(Int(chunk.size))
                case .read(let hash, let confirmed):
                    finished = (hash, confirmed)
                case .failed(let error):
                    throw error
                }
                await announce(all: false)
                if let finished, uploaded == queued {
                    if finished.hash == expected || finished.confirmed != nil { await announce(all: true) }
                    return Stored(hash: finished.hash, chunks: chunks, confirmed: finished.confirmed)
                }
            }
            throw CancellationError()
        }
    }

    /// Cuts and hashes the file, asking the server about its chunks as it goes; confirms it when it is not
    /// `expected`.
    private func read(expecting expected: String?, into sink: AsyncStream<Event>.Continuation) async {
        var window: [(offset: Int64, chunk: DocumentChunk)] = []
        var asked = Set<String>()
        var offset: Int64 = 0
        func ask() async throws {
            let fresh = window.map(\.chunk.hash).filter { asked.insert($0).inserted }
            let missing = fresh.isEmpty ? [] : Set(try await client.missing(fresh))
            await readAhead.take(Int(window.reduce(0) { $0 + $1.chunk.size }))
            try Task.checkCancellation()
            sink.yield(.asked(window, held: Set(fresh).subtracting(missing), missing: missing))
            window = []
        }
        do {
            let whole = try await FileContent.chunks(of: descriptor) { bytes, hash in
                window.append((offset, DocumentChunk(hash: hash, size: Int64(bytes.count))))
                offset += Int64(bytes.count)
                guard window.count == SyncEngine.chunksPerQuestion else { return }
                guard stillPlanned() else { throw ChangedWhileSent() }
                try await ask()
            }
            if !window.isEmpty { try await ask() }
            sink.yield(.read(whole, confirmed: whole == expected ? nil : confirm(whole, size: offset)))
        } catch {
            sink.yield(.failed(error))
        }
    }

    /// The file's details, if it is the one read (the same inode and `size`), unchanged while it is read again
    /// whole, and hashes to `whole`: checked as a scan checks a file, and looked at again after it is read. A file
    /// still growing fails at the first look, before it is read.
    private func confirm(_ whole: String, size: Int64) -> LocalScanner.Entry? {
        var status = stat()
        guard fstat(descriptor, &status) == 0, let before = LocalScanner.stat(file.path, path: ""),
            before.inode == UInt64(status.st_ino), before.size == size, (try? FileContent.hash(of: file)) == whole,
            let after = LocalScanner.stat(file.path, path: ""),
            (after.inode, after.size, after.modified) == (before.inode, before.size, before.modified)
        else { return nil }
        return before
    }

    /// Uploads waiting chunks, each read again from the file, until none waits.
    private func upload(into sink: AsyncStream<Event>.Continuation) async {
        var buffer = waiting.withLock { $0.buffers.popLast() } ?? ByteBuffer()
        while let (offset, chunk) = waiting.withLock({ $0.take() }) {
            buffer.clear()
            do {
                guard try FileContent.bytes(of: descriptor, at: offset, count: Int(chunk.size), into: &buffer) else {
                    throw ChangedWhileSent()
                }
                try await client.upload(chunk: buffer, hash: chunk.hash)
            } catch ErrorCode.chunkMismatch {
                sink.yield(.failed(ChangedWhileSent()))
                return
            } catch {
                sink.yield(.failed(error))
                return
            }
            await activity.moved(item, bytes: chunk.size)
            sink.yield(.uploaded(chunk))
            // A buffer keeps the pages of the largest chunk it held.
            if buffer.capacity > SyncEngine.reusedBufferCapacity { buffer = ByteBuffer() }
        }
        waiting.withLock { $0.buffers.append(buffer) }
    }

    /// Tells the other devices that these chunks of the item's coming version, from position `from`, are stored.
    static func announce(_ id: ItemID, _ chunks: ArraySlice<DocumentChunk>, from: Int, client: DocumentClient) async throws {
        for start in stride(from: chunks.startIndex, to: chunks.endIndex, by: ChunksAnnouncement.maxChunks) {
            let run = Array(chunks[start..<min(chunks.endIndex, start + ChunksAnnouncement.maxChunks)])
            try await client.announce(id.rawValue, from: from + (start - chunks.startIndex), chunks: run)
        }
    }
}
