import CFileOps
import Crypto
import Foundation
import NIOCore
import NimbusCore

/// Blobs as files in a directory: written to a temporary name, synced, then renamed into place.
package final class LocalBlobStore: BlobStore {
    private let directory: URL
    private let sweeping: SweepDecisionLock

    /// The store in `directory`, made unless `creating` is false (a store only read from, by `nimbus check`,
    /// changes nothing until it writes).
    package init(directory: URL, creating: Bool = true) throws {
        self.directory = directory
        if creating { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        sweeping = SweepDecisionLock(beside: directory)
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
            for chunk in chunks where !chunk.isHashed {
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

    package func sizes(_ ids: [String]) async throws -> [String: Int64] {
        // Nothing to look up takes no turn on the blocking threads, which chunk syncs may hold for a while: a
        // large upload's questions about new chunks look up none.
        guard !ids.isEmpty else { return [:] }
        let directory = directory
        return try await BlockingWork.run {
            var sizes: [String: Int64] = [:]
            for id in ids {
                guard let path = Self.path(of: id, in: directory) else { continue }
                var status = stat()
                if stat(path, &status) == 0 { sizes[id] = Int64(status.st_size) }
            }
            return sizes
        }
    }

    package func load(_ ids: [String], maxBytes: Int) async throws -> [String: Data] {
        let directory = directory
        return try await BlockingWork.run {
            var loaded: [String: Data] = [:]
            var total = 0
            for id in ids where loaded[id] == nil {
                guard let path = Self.path(of: id, in: directory),
                    let bytes = FileManager.default.contents(atPath: path)
                else { continue }
                total += bytes.count
                guard total <= maxBytes else { throw BlobTooLarge(limit: Int64(maxBytes)) }
                loaded[id] = bytes
            }
            return loaded
        }
    }

    /// Bytes read at once: each piece is one trip to a blocking thread, so a small file takes one (open, size
    /// and its bytes together) and a chunk (4 MiB at most) eight, while a large asset streams in bounded memory.
    static let readPieceBytes = 512 << 10

    package func read(_ id: String, range: ClosedRange<Int64>?, into consume: (ByteBuffer) async throws -> Void)
        async throws
    {
        guard let path = Self.path(of: id, in: directory) else { throw StoreError.missing("blob \(id.prefix(80))") }
        let pieceBytes = Int64(Self.readPieceBytes)
        // The first piece is read with the opening, in the same trip.
        let (file, wanted, first) = try await BlockingWork.run { () -> (BlobFile, ClosedRange<Int64>?, ByteBuffer?) in
            let file = try BlobFile(opening: path, id: id)
            guard file.size > 0 else { return (file, nil, nil) }
            let wanted = range?.clamped(to: 0...(file.size - 1)) ?? 0...(file.size - 1)
            do {
                let length = Int(min(pieceBytes, Int64(wanted.count)))
                return (file, wanted, try file.read(at: wanted.lowerBound, length: length))
            } catch {
                file.close()
                throw error
            }
        }
        defer { file.close() }
        guard let wanted, let first else { return }
        var offset = wanted.lowerBound + Int64(first.readableBytes)
        try await consume(first)
        while offset <= wanted.upperBound {
            let (start, length) = (offset, Int(min(pieceBytes, wanted.upperBound - offset + 1)))
            let piece = try await BlockingWork.run { try file.read(at: start, length: length) }
            offset += Int64(length)
            try await consume(piece)
        }
    }

    /// The path of a finished blob's file: ids are 64 hexadecimal characters, and anything else (a path,
    /// say) names no blob.
    private static func path(of id: String, in directory: URL) -> String? {
        guard Secrets.isAPITokenShaped(id) else { return nil }
        return directory.appendingPathComponent(id.lowercased()).path
    }

    package func retain(_ ids: [String]) async throws -> Set<String> {
        guard !ids.isEmpty else { return [] }  // as in `sizes`
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

    package func list(_ each: ([StoredBlobSize]) async throws -> Void) async throws {
        let directory = directory
        let names = try await BlockingWork.run {
            try FileManager.default.contentsOfDirectory(atPath: directory.path).filter(Self.isBlobName).sorted()
        }
        for page in stride(from: 0, to: names.count, by: 1000) {
            let sizes = try await self.sizes(Array(names[page..<min(page + 1000, names.count)]))
            // A blob swept since the listing is left out, as a listing a moment later would.
            try await each(sizes.map { StoredBlobSize(id: $0.key, size: $0.value) }.sorted { $0.id < $1.id })
        }
    }

    package func holdingOffSweeps<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await BackupFiles.holdingLock(Self.sweepLock(for: directory), shared: true, body)
    }

    package func makeWriter(restoring id: String, maxBytes: Int64) async throws -> any BlobWriter {
        guard Self.isBlobName(id) else { throw StoreError.missing("blob \(id.prefix(80))") }
        let directory = directory
        return try await BlockingWork.run {
            // A restore's store is made without its folder, so a restore refused early leaves nothing behind.
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return try LocalBlobWriter(directory: directory, id: id, maxBytes: maxBytes)
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
    private let handle: Foundation.FileHandle
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
    static func createFile(_ url: URL) throws -> Foundation.FileHandle {
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

/// A finished blob's file open for reading, and its size when opened.
private final class BlobFile: Sendable {
    let descriptor: Int32
    let size: Int64
    private let id: String

    init(opening path: String, id: String) throws {
        self.id = id
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { throw StoreError.missing("blob \(id)") }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            Foundation.close(descriptor)
            throw error
        }
        size = Int64(status.st_size)
    }

    /// `length` bytes from `offset`; a file that ends sooner (blobs never shrink) is an error.
    func read(at offset: Int64, length: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        while buffer.readableBytes < length {
            let wanted = length - buffer.readableBytes
            let position = offset + Int64(buffer.readableBytes)
            var count = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { bytes in
                count = pread(descriptor, bytes.baseAddress, wanted, off_t(position))
                return max(count, 0)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw count < 0
                    ? POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) : StoreError.missing("blob \(id) ends early")
            }
        }
        return buffer
    }

    func close() { Foundation.close(descriptor) }
}
