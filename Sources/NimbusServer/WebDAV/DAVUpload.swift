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
        // Cut, not yet hashed: a chunk's own hash is taken where it is stored.
        var batch: [Data] = []
        var batchBytes = 0
        var size: Int64 = 0

        func cut(all: Bool) {
            var start = 0
            while pending.count - start >= chunker.maximumSize || (all && start < pending.count) {
                let length = pending.withUnsafeBytes {
                    chunker.nextChunkLength(in: UnsafeRawBufferPointer(rebasing: $0[start...]))
                }
                let bytes = Data(pending[start..<start + length])
                whole.update(data: bytes)
                batch.append(bytes)
                batchBytes += length
                start += length
            }
            if start > 0 { pending.removeFirst(start) }
        }

        // A full batch is hashed, stored (written, synced) and held while the next one arrives and is cut: one
        // batch in flight at a time, so memory stays at two batches, and the disk's syncs overlap the hashing.
        var storing: Task<[DocumentChunk], any Error>?
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
                if batchBytes >= Self.batchBytes {
                    chunks += try await storing?.value ?? []
                    let full = batch
                    storing = Task { try await keep(full) }
                    (batch, batchBytes) = ([], 0)
                }
            }
            chunks += try await storing?.value ?? []
        } catch {
            _ = try? await storing?.value
            throw error
        }
        cut(all: true)
        let last = batch.map(ChunkBundle.Chunk.init(hashing:))
        if !last.isEmpty { try await server.blobs.storeChunks(last) }
        chunks += last.map { DocumentChunk(hash: $0.hash, size: Int64($0.bytes.count)) }
        guard chunks.count <= DocumentNames.maxChunks else {
            throw DAVError(.contentTooLarge, .requestTooLarge, "a file holds at most \(DocumentNames.maxChunks) chunks")
        }
        let content = DocumentContent(
            contentHash: Secrets.hex(whole.finalize()), size: size, chunks: chunks, modifiedAt: modifiedAt)
        return (content, Self.sizes(last))
    }

    /// An empty file's content: no chunks.
    static func emptyContent(modifiedAt: Int64) -> DocumentContent {
        DocumentContent(contentHash: Secrets.hex(SHA256.hash(data: Data())), size: 0, chunks: [], modifiedAt: modifiedAt)
    }

    /// Hashes and stores the chunks (synced) and records that the user holds them, so a file over the quota is
    /// refused before the rest of it arrives; over the quota, none is held. The chunks as the version names them.
    private func keep(_ batch: [Data]) async throws -> [DocumentChunk] {
        let chunks = batch.map(ChunkBundle.Chunk.init(hashing:))
        try await server.blobs.storeChunks(chunks)
        try await ChunkTransfers(server: server).hold(zone, Self.sizes(chunks))
        return chunks.map { DocumentChunk(hash: $0.hash, size: Int64($0.bytes.count)) }
    }

    private static func sizes(_ batch: [ChunkBundle.Chunk]) -> [String: Int64] {
        Dictionary(batch.map { ($0.hash, Int64($0.bytes.count)) }, uniquingKeysWith: { first, _ in first })
    }
}
