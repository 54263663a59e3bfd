import Foundation
import NIOCore
import NimbusCore

/// A stored file: its id, size and SHA-256 (base64), which CloudKit calls the file checksum.
package struct StoredBlob: Sendable, Hashable {
    package var id: String
    package var size: Int64
    package var checksum: String

    package init(id: String, size: Int64, checksum: String) {
        self.id = id
        self.size = size
        self.checksum = checksum
    }
}

/// Where asset files and document chunks live: written once, then read by id, whole, by byte range or
/// streamed, and swept when nothing names them. Nothing reaches a blob but through these calls (no file
/// paths), so a blob store can be a local folder or an object store. Its calls may block (files, or a
/// network), so they are async and a backend runs them off Swift's cooperative threads.
package protocol BlobStore: Sendable {
    /// Starts a new blob; its bytes are written in order, and it exists only once finished.
    func makeWriter(maxBytes: Int64) async throws -> any BlobWriter
    /// Starts a document chunk stored under its SHA-256 (`hash`, lowercase hexadecimal), so that a chunk is
    /// stored once however many versions hold it. `finish` throws `BlobMismatch` (and keeps nothing) when
    /// the bytes do not hash to `hash`; a chunk already stored stays as it is.
    func makeChunkWriter(hash: String, maxBytes: Int64) async throws -> any BlobWriter
    /// Stores many chunks at once, durable together (one sync for all where the system allows). Throws
    /// `BlobMismatch` for the first whose bytes do not hash to its name, before anything is stored.
    func storeChunks(_ chunks: [ChunkBundle.Chunk]) async throws
    /// The size of each of `ids` that is a finished blob (the others have none).
    func sizes(_ ids: [String]) async throws -> [String: Int64]
    /// The bytes, whole, of those of `ids` that are finished blobs: for blobs small enough to hold in memory
    /// (document chunks). Throws `BlobTooLarge` when together they hold more than `maxBytes`.
    func load(_ ids: [String], maxBytes: Int) async throws -> [String: Data]
    /// Streams a finished blob's bytes, or those at the offsets `range` (clamped to its size), to `consume`
    /// piece by piece, reading the next piece once `consume` has taken the last. Throws `StoreError.missing`
    /// before any byte when there is no such blob.
    func read(_ id: String, range: ClosedRange<Int64>?, into consume: (ByteBuffer) async throws -> Void) async throws
    /// Marks blobs as in use now, so that a sweep keeps them for its grace period whatever its scan saw
    /// (a chunk a client was told is stored, about to be named in a version); returns those that are
    /// stored (the others may have been swept just before).
    func retain(_ ids: [String]) async throws -> Set<String>
    /// Deletes every blob not in `live` and every unfinished one, if last written before `cutoff`;
    /// returns how many it deleted. Skipped (0) while a backup holds sweeps off.
    func sweep(keeping live: Set<String>, writtenBefore cutoff: Date) async throws -> Int
    /// Calls `each` with the ids and sizes of finished blobs, a page at a time, until all were listed.
    func list(_ each: ([StoredBlobSize]) async throws -> Void) async throws
    /// Runs `body` (a backup copying the blobs its database names) while no sweep deletes anything, on any
    /// node: it waits for a sweep under way to end, and sweeps meanwhile are skipped.
    func holdingOffSweeps<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T
    /// Starts a blob under the id it had when it was backed up, for a restore, which checks its bytes
    /// against the backup's manifest. Throws `StoreError.missing` for an id no blob can have.
    func makeWriter(restoring id: String, maxBytes: Int64) async throws -> any BlobWriter
}

/// A finished blob's id and size, as a listing gives them.
package struct StoredBlobSize: Sendable, Hashable {
    package var id: String
    package var size: Int64
}

extension BlobStore {
    /// The size of a finished blob, or nil.
    package func size(_ id: String) async throws -> Int64? { try await sizes([id])[id] }
}

/// One blob being written; its caller awaits each call before making the next.
package protocol BlobWriter: AnyObject, Sendable {
    /// Appends bytes; throws `BlobTooLarge` past the limit (the blob is then discarded).
    func write(_ bytes: Data) async throws
    /// Makes the blob durable and visible.
    func finish() async throws -> StoredBlob
    /// Drops an unfinished blob.
    func discard() async
}

package struct BlobTooLarge: Error, Sendable { package var limit: Int64 }

/// A chunk's bytes do not hash to the name it was uploaded under.
package struct BlobMismatch: Error, Sendable { package var actual: String }
