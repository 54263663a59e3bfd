import CFileOps
import Crypto
import Foundation
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

/// Where asset files live: files written once, read by id. Its calls may block (files, or a network),
/// so they are async and a backend runs them off Swift's cooperative threads.
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
    /// The files holding those of `ids` that are finished blobs (the others have none).
    func files(_ ids: [String]) async throws -> [String: URL]
    /// Marks blobs as in use now, so that a sweep keeps them for its grace period whatever its scan saw
    /// (a chunk a client was told is stored, about to be named in a version); returns those that are
    /// stored (the others may have been swept just before).
    func retain(_ ids: [String]) async throws -> Set<String>
    /// Deletes every blob not in `live` and every unfinished one, if last written before `cutoff`;
    /// returns how many it deleted.
    func sweep(keeping live: Set<String>, writtenBefore cutoff: Date) async throws -> Int
}

extension BlobStore {
    /// The file holding a finished blob, or nil.
    package func file(_ id: String) async throws -> URL? { try await files([id])[id] }
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

/// Blobs as files in a directory: written to a temporary name, synced, then renamed into place.
package final class LocalBlobStore: BlobStore {
    private let directory: URL
    private let sweeping: SweepDecisionLock

    package init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        sweeping = try SweepDecisionLock(beside: directory)
    }

    package func makeWriter(maxBytes: Int64) async throws -> any BlobWriter {
        let (directory, id) = (directory, Secrets.apiToken())
        return try await BlockingWork.run { try LocalBlobWriter(directory: directory, id: id, maxBytes: maxBytes) }
    }

    package func makeChunkWriter(hash: String, maxBytes: Int64) async throws -> any BlobWriter {
        guard DocumentNames.isHash(hash) else { throw BlobMismatch(actual: hash) }
        let directory = directory
        return try await BlockingWork.run {
            try LocalBlobWriter(directory: directory, id: hash, maxBytes: maxBytes, contentAddressed: true)
        }
    }

    package func storeChunks(_ chunks: [ChunkBundle.Chunk]) async throws {
        let directory = directory
        try await BlockingWork.run {
            for chunk in chunks {
                let actual = Secrets.hex(SHA256.hash(data: chunk.bytes))
                guard actual == chunk.hash else { throw BlobMismatch(actual: actual) }
            }
            var written: [(temporary: URL, final: URL)] = []
            do {
                for chunk in chunks {
                    let temporary = directory.appendingPathComponent(LocalBlobWriter.unfinishedPrefix + Secrets.apiToken())
                    written.append((temporary, directory.appendingPathComponent(chunk.hash)))
                    // Not FileManager.createFile, which writes through a second temporary file and syncs it.
                    let handle = try LocalBlobWriter.createFile(temporary)
                    defer { try? handle.close() }
                    try handle.write(contentsOf: chunk.bytes)
                }
                try LocalBlobWriter.synchronize(written.map(\.temporary), in: directory)
                for (temporary, final) in written where rename(temporary.path, final.path) != 0 {
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
                try LocalBlobWriter.synchronizeDirectory(directory)
            } catch {
                for (temporary, _) in written { unlink(temporary.path) }
                throw LocalBlobWriter.storeError(error)
            }
        }
    }

    package func files(_ ids: [String]) async throws -> [String: URL] {
        let directory = directory
        return try await BlockingWork.run {
            var files: [String: URL] = [:]
            // Ids are 64 hexadecimal characters; anything else (a path, say) names no blob.
            for id in ids where Secrets.isAPITokenShaped(id) {
                let url = directory.appendingPathComponent(id.lowercased())
                if FileManager.default.fileExists(atPath: url.path) { files[id] = url }
            }
            return files
        }
    }

    package func retain(_ ids: [String]) async throws -> Set<String> {
        let (directory, sweeping) = (directory, sweeping)
        return try await BlockingWork.run {
            var retained = Set<String>()
            for id in ids where Secrets.isAPITokenShaped(id) {
                let path = directory.appendingPathComponent(id.lowercased()).path
                // Under the sweep's lock, a file is either swept already or touched before the sweep looks.
                let touched = try sweeping.withLock { utimes(path, nil) == 0 }
                if touched { retained.insert(id) }
            }
            return retained
        }
    }

    /// The file beside a blob directory (`blobs.lock` for `blobs`) that a backup holds shared while it
    /// copies (`EmbeddedBackup`) and a sweep exclusively: a sweep during a backup would delete blobs the
    /// backup's database names. Beside, not in it: the directory holds blobs only.
    package static func sweepLock(for directory: URL) -> URL { directory.appendingPathExtension("lock") }

    /// Whether a file name in the directory is a finished blob's (not an unfinished one's, nor the lock's).
    package static func isBlobName(_ name: String) -> Bool { Secrets.isAPITokenShaped(name) && name == name.lowercased() }

    package func sweep(keeping live: Set<String>, writtenBefore cutoff: Date) async throws -> Int {
        let (directory, sweeping) = (directory, sweeping)
        return try await BlockingWork.run {
            // While a backup runs, this sweep is skipped; the next one collects what it would have.
            try BackupFiles.ifUnlocked(Self.sweepLock(for: directory)) {
                try Self.sweep(directory, keeping: live, writtenBefore: cutoff, lock: sweeping)
            } ?? 0
        }
    }

    private static func sweep(
        _ directory: URL, keeping live: Set<String>, writtenBefore cutoff: Date, lock: SweepDecisionLock
    )
        throws -> Int
    {
        let live = Set(live.map { $0.lowercased() })
        var deleted = 0
        for file in try FileManager.default.contentsOfDirectory(
            at: directory, includingPropertiesForKeys: [.contentModificationDateKey])
        {
            let name = file.lastPathComponent
            let unfinished = name.hasPrefix(LocalBlobWriter.unfinishedPrefix)
            guard unfinished || (Secrets.isAPITokenShaped(name) && !live.contains(name)) else { continue }
            let removed = try lock.withLock {
                var status = stat()
                guard stat(file.path, &status) == 0, Double(status.st_mtim.tv_sec) < cutoff.timeIntervalSince1970 else {
                    return false
                }
                try FileManager.default.removeItem(at: file)
                return true
            }
            if removed { deleted += 1 }
        }
        return deleted
    }
}

/// @unchecked Sendable: its caller (one upload) awaits every call before the next, so its state is never
/// touched by two threads at once; each call runs on `BlockingWork`'s threads.
final class LocalBlobWriter: BlobWriter, @unchecked Sendable {
    static let unfinishedPrefix = "incoming-"
    private let id: String
    private let temporary: URL
    private let final: URL
    private let handle: FileHandle
    private let maxBytes: Int64
    private var hasher = SHA256()
    private var size: Int64 = 0
    private var unsynced = 0
    /// Bytes written between two syncs. Synced only at the end, a 50 MB file went to the disk in one
    /// flush that every commit's sync queued behind (key-value writes' p99 rose from 11 to 42 ms during
    /// uploads); a few megabytes at a time keep each flush to a few milliseconds.
    static let syncInterval = 4 << 20

    /// Named by its SHA-256, which `finish` checks; several uploads of one chunk may run at once.
    private let contentAddressed: Bool

    init(directory: URL, id: String, maxBytes: Int64, contentAddressed: Bool = false) throws {
        self.id = id
        self.maxBytes = maxBytes
        self.contentAddressed = contentAddressed
        temporary = directory.appendingPathComponent(Self.unfinishedPrefix + (contentAddressed ? Secrets.apiToken() : id))
        final = directory.appendingPathComponent(id)
        handle = try Self.createFile(temporary)
    }

    func write(_ bytes: Data) async throws {
        try await BlockingWork.run { try self.writeNow(bytes) }
    }

    func finish() async throws -> StoredBlob {
        try await BlockingWork.run { try self.finishNow() }
    }

    func discard() async {
        _ = try? await BlockingWork.run { self.discardNow() }
    }

    private func writeNow(_ bytes: Data) throws {
        size += Int64(bytes.count)
        guard size <= maxBytes else {
            discardNow()
            throw BlobTooLarge(limit: maxBytes)
        }
        hasher.update(data: bytes)
        do {
            try handle.write(contentsOf: bytes)
            unsynced += bytes.count
            if unsynced >= Self.syncInterval {
                try handle.synchronize()
                unsynced = 0
            }
        } catch {
            discardNow()
            throw Self.storeError(error)
        }
    }

    private func finishNow() throws -> StoredBlob {
        let digest = Data(hasher.finalize())
        if contentAddressed {
            let actual = Secrets.hex(digest)
            guard actual == id else {
                discardNow()
                throw BlobMismatch(actual: actual)
            }
        }
        do {
            try handle.synchronize()
            try handle.close()
            // rename(2) replaces a chunk another upload stored meanwhile with the same bytes, atomically.
            guard rename(temporary.path, final.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            // The rename is durable only once the directory is synced; the blob is acknowledged after this.
            try Self.synchronizeDirectory(final.deletingLastPathComponent())
        } catch {
            discardNow()
            throw Self.storeError(error)
        }
        return StoredBlob(id: id, size: size, checksum: digest.base64EncodedString())
    }

    /// `error` as `StoreError.storageFull` when it says the disk (or the owner's disk quota) is full.
    static func storeError(_ error: any Error) -> any Error {
        let bridged = error as NSError
        let full =
            (bridged.domain == NSCocoaErrorDomain && bridged.code == CocoaError.fileWriteOutOfSpace.rawValue)
            || (bridged.domain == NSPOSIXErrorDomain && [ENOSPC, EDQUOT].contains(Int32(bridged.code)))
        return full ? StoreError.storageFull : error
    }

    /// A new file, owner-only, open for writing; fails if something is there already.
    static func createFile(_ url: URL) throws -> FileHandle {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// Makes `files` durable (one sync of their file system on Linux).
    static func synchronize(_ files: [URL], in directory: URL) throws {
        let paths = files.map { strdup($0.path) }
        defer { for path in paths { free(path) } }
        guard nimbus_sync_files(directory.path, paths.map { UnsafePointer($0) }, Int32(paths.count)) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    static func synchronizeDirectory(_ directory: URL) throws {
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    private func discardNow() {
        try? handle.close()
        try? FileManager.default.removeItem(at: temporary)
    }
}
