import Crypto
import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// A PUT's body made into a document version's content as it arrives: cut by the chunker every device
/// uses (so a file uploaded here and on a device is stored once), each chunk stored and synced in the blob
/// store and held by the user before the version names it. Memory stays at a few chunks whatever the
/// file's size.
struct DAVUpload: Sendable {
    let server: ServerState
    let zone: ZoneKey

    /// Bytes of chunks stored together: one sync for several small chunks, a bounded buffer for large ones.
    static let batchBytes = 8 << 20
    private let chunker = ContentDefinedChunker.standard

    /// The content, and the chunks of its last batch (hash → size): stored, but left for the caller to hold
    /// in the commit that names them, so a small file costs one synced commit rather than two.
    func store(_ body: RequestBody, modifiedAt: Int64) async throws -> (content: DocumentContent, unheld: [String: Int64]) {
        // Grown as bytes arrive, not reserved up front: two chunks' worth (8 MiB) mapped and unmapped for every
        // small file cost it a system call or two and page faults.
        var pending: [UInt8] = []
        var whole = SHA256()
        var chunks: [DocumentChunk] = []
        var batch: [ChunkBundle.Chunk] = []
        var size: Int64 = 0

        func cut(all: Bool) {
            var start = 0
            while pending.count - start >= chunker.maximumSize || (all && start < pending.count) {
                let length = pending.withUnsafeBytes {
                    chunker.nextChunkLength(in: UnsafeRawBufferPointer(rebasing: $0[start...]))
                }
                let chunk = ChunkBundle.Chunk(hashing: Data(pending[start..<start + length]))
                whole.update(data: chunk.bytes)
                chunks.append(DocumentChunk(hash: chunk.hash, size: Int64(length)))
                batch.append(chunk)
                start += length
            }
            if start > 0 { pending.removeFirst(start) }
        }

        // A full batch is stored (written, synced, held) while the next one arrives and is cut: one batch in
        // flight at a time, so memory stays at two batches.
        var storing: Task<Void, any Error>?
        do {
            var buffers = body.makeAsyncIterator()
            while true {
                let buffer: ByteBuffer?
                do {
                    buffer = try await buffers.next()
                } catch {
                    throw DAVError.badRequest("the upload ended before it was complete; nothing was saved")
                }
                guard let buffer else { break }
                size += Int64(buffer.readableBytes)
                guard size <= DocumentNames.maxFileBytes else {
                    throw DAVError(
                        .contentTooLarge, .requestTooLarge, "a file holds at most \(DocumentNames.maxFileBytes) bytes")
                }
                buffer.withUnsafeReadableBytes { pending.append(contentsOf: $0) }
                // Cut only once two chunks' worth is pending, so the bytes left over move once per few chunks.
                if pending.count >= 2 * chunker.maximumSize { cut(all: false) }
                if batch.reduce(0, { $0 + $1.bytes.count }) >= Self.batchBytes {
                    try await storing?.value
                    let full = batch
                    storing = Task { try await keep(full) }
                    batch.removeAll(keepingCapacity: true)
                }
            }
            try await storing?.value
        } catch {
            _ = try? await storing?.value
            throw error
        }
        cut(all: true)
        if !batch.isEmpty { try await server.blobs.storeChunks(batch) }
        guard chunks.count <= DocumentNames.maxChunks else {
            throw DAVError(.contentTooLarge, .requestTooLarge, "a file holds at most \(DocumentNames.maxChunks) chunks")
        }
        let content = DocumentContent(
            contentHash: Secrets.hex(whole.finalize()), size: size, chunks: chunks, modifiedAt: modifiedAt)
        return (content, Self.sizes(batch))
    }

    /// An empty file's content: no chunks.
    static func emptyContent(modifiedAt: Int64) -> DocumentContent {
        DocumentContent(contentHash: Secrets.hex(SHA256.hash(data: Data())), size: 0, chunks: [], modifiedAt: modifiedAt)
    }

    /// Stores the chunks (synced) and records that the user holds them, so a file over the quota is refused
    /// before the rest of it arrives; over the quota, none is held.
    private func keep(_ batch: [ChunkBundle.Chunk]) async throws {
        try await server.blobs.storeChunks(batch)
        try await ChunkTransfers(server: server).hold(zone, Self.sizes(batch))
    }

    private static func sizes(_ batch: [ChunkBundle.Chunk]) -> [String: Int64] {
        Dictionary(batch.map { ($0.hash, Int64($0.bytes.count)) }, uniquingKeysWith: { first, _ in first })
    }
}
