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
/// the round planned with. What was read after the file's details were last settled as they are at the end is the
/// file as it is (`read(expecting:into:)`); the rest is confirmed by reading it once more while the last uploads
/// finish: the file unchanged meanwhile and hashing to what was sent. Either way the round saves it
/// (`Stored.confirmed`) instead of leaving it to the next round, which would read it again after the uploads.
package final class LargeUpload: Sendable {
    /// The file is not the one the round planned with, or changed while its chunks were read again.
    package struct ChangedWhileSent: Error {}

    /// What the upload stored: the file's SHA-256 and chunks as it was read.
    package struct Stored: Sendable {
        package var hash: String
        package var chunks: [DocumentChunk]
        /// The file's details while it held exactly these bytes: settled from the reading's beginning to its end,
        /// or, when it was not what the round planned with, what was read before they settled read again after it
        /// was sent. Nil when it changed meanwhile, or was what was planned and not settled throughout the reading
        /// (the scan's details then stand).
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
        /// The whole file read: its SHA-256, and its details when they were settled and the same from the reading's
        /// beginning to its end.
        case read(String, unchanged: LocalScanner.Entry?)
        /// A file read that was not the content expected, read again: its details when it was confirmed
        /// (`Stored.confirmed`).
        case confirmed(LocalScanner.Entry?)
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
            var whole: String?
            var confirmation: LocalScanner.Entry??
            // A hint, so in order: a device that misses it downloads these chunks once the version is saved. Once
            // the file is read to its end, every chunk is announced as it is stored, before the file is confirmed:
            // the other devices then hold the version by the time it is saved.
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
                case .read(let hash, let unchanged):
                    whole = hash
                    if let unchanged { confirmation = .some(unchanged) }
                case .confirmed(let entry):
                    confirmation = .some(entry)
                case .failed(let error):
                    throw error
                }
                await announce(all: whole != nil)
                if let whole, uploaded == queued, whole == expected || confirmation != nil {
                    return Stored(hash: whole, chunks: chunks, confirmed: confirmation ?? nil)
                }
            }
            throw CancellationError()
        }
    }

    /// Cuts and hashes the file, asking the server about its chunks as it goes; confirms it when it is not
    /// `expected`.
    ///
    /// The file's details are looked at before the reading and at each question: what was read after a look that
    /// found them settled, and as they are at the end, is the file as it is (checked as a scan checks a file, with
    /// its status change time too: `FileLook`). Only what was read before is read again to confirm it: a file
    /// written as it is read stops changing early in the reading, and reading all of it again was the transfer's
    /// last ~0.3 s.
    private func read(expecting expected: String?, into sink: AsyncStream<Event>.Continuation) async {
        var window: [(offset: Int64, chunk: DocumentChunk)] = []
        var read: [(offset: Int64, chunk: DocumentChunk)] = []
        var asked = Set<String>()
        var offset: Int64 = 0
        // Only details settled when looked at count (`FileLook.isSettled`): a write after the look shows in them.
        var settled = SettledDetails<FileLook>()
        func lookAgain(read count: Int) { settled.look(self.look().flatMap { $0.isSettled() ? $0 : nil }, read: count) }
        func ask() async throws {
            let fresh = window.map(\.chunk.hash).filter { asked.insert($0).inserted }
            let missing = fresh.isEmpty ? [] : Set(try await client.missing(fresh))
            await readAhead.take(Int(window.reduce(0) { $0 + $1.chunk.size }))
            try Task.checkCancellation()
            sink.yield(.asked(window, held: Set(fresh).subtracting(missing), missing: missing))
            read += window
            window = []
        }
        do {
            lookAgain(read: 0)
            let whole = try await FileContent.chunks(of: descriptor) { bytes, hash in
                window.append((offset, DocumentChunk(hash: hash, size: Int64(bytes.count))))
                offset += Int64(bytes.count)
                guard window.count == SyncEngine.chunksPerQuestion else { return }
                lookAgain(read: read.count + window.count)
                guard stillPlanned() else { throw ChangedWhileSent() }
                try await ask()
            }
            if !window.isEmpty { try await ask() }
            let now = self.look().flatMap { $0.entry.size == offset ? $0 : nil }
            let stale = settled.stale(now: now, read: read.count)
            sink.yield(.read(whole, unchanged: stale == 0 ? now?.entry : nil))
            if whole != expected && stale > 0 {
                var confirmed: LocalScanner.Entry?
                if let now { confirmed = await confirm(read[..<stale], as: now) }
                sink.yield(.confirmed(confirmed))
            }
        } catch {
            sink.yield(.failed(error))
        }
    }

    /// The file's details as `now` found them, if it holds each of `chunks` at its offset (its bytes there hash
    /// again to what was sent) and they are the same before and after: the chunks' hashes were taken from the same
    /// bytes as the whole file's, so with the chunks read after the details last changed they stand for it. The
    /// reading waits until the details are settled (`FileLook.isSettled`), so a write after it shows in them.
    ///
    /// Several readers share the bytes (`SyncEngine.confirmingReaders`): the uploads are done or nearly, and the
    /// other devices wait on the version this saves, so the reading is the whole of the transfer's last stretch.
    private func confirm(
        _ chunks: ArraySlice<(offset: Int64, chunk: DocumentChunk)>, as now: FileLook
    ) async -> LocalScanner.Entry? {
        let unsettled = now.changed + now.settlingTime - FileLook.now()
        if unsettled >= 0 { try? await Task.sleep(for: .nanoseconds(unsettled + 1)) }
        guard look() == now, now.isSettled(),
            await FileContent.holds(Array(chunks), of: descriptor, readers: SyncEngine.confirmingReaders),
            look() == now
        else { return nil }
        return now.entry
    }

    /// The file at the upload's path as it is now, when it is the file being read (the same inode).
    private func look() -> FileLook? { FileLook.of(file.path, open: descriptor) }

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
