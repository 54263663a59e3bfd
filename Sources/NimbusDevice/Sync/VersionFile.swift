import CFileOps
import Crypto
import Foundation
import NimbusCore

/// A version being written into a new file at the folder's root, under a name scans skip, chunk by chunk in
/// order: each chunk is checked against its hash as it is appended, the whole against the version's content
/// hash when it is finished. Not synced here: the engine syncs a slice's downloads together.
///
/// One task writes it at a time (a download, then the round that takes it over).
final class VersionFile {
    let url: URL
    private let handle: FileHandle
    private var hasher = SHA256()
    /// Chunks appended so far.
    private(set) var count = 0
    private var size: Int64 = 0
    /// Whether each chunk's bytes start for the disk as they are written (`nimbus_start_writeback`).
    private let writesBack: Bool

    /// With `writesBack`, the bytes go to the disk while the rest downloads, and the sync that makes the file
    /// durable waits for the last few: a large file's sync otherwise wrote all of it at the end (a 256 MB file
    /// held 0.14–0.34 s of B's time there).
    init(in folder: URL, writesBack: Bool = false) throws {
        (url, handle) = try Self.create(in: folder)
        self.writesBack = writesBack
    }

    /// A new empty file at the folder's root, under a name scans skip.
    static func create(in folder: URL) throws -> (URL, FileHandle) {
        let file = folder.appendingPathComponent(LocalScanner.temporaryPrefix + UUIDString.random())
        // Not FileManager.createFile, which writes through a second temporary file and syncs it.
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw NimbusError(.internalError, "cannot create \(file.path)") }
        return (file, FileHandle(fileDescriptor: descriptor, closeOnDealloc: true))
    }

    func append(_ bytes: UnsafeRawBufferPointer, as chunk: DocumentChunk) throws {
        guard Secrets.hex(SHA256.hash(data: bytes)) == chunk.hash else {
            throw NimbusError(.internalError, "chunk \(chunk.hash) arrived with other bytes")
        }
        hasher.update(bufferPointer: bytes)
        try handle.write(contentsOf: bytes)
        // Only a head start: a failure leaves the bytes to the sync.
        if writesBack { _ = nimbus_start_writeback(handle.fileDescriptor, size, Int64(bytes.count)) }
        size += Int64(bytes.count)
        count += 1
    }

    /// The file, closed, once it holds exactly the version; otherwise it is removed.
    func finish(_ content: DocumentContent) throws -> URL {
        try? handle.close()
        guard count == content.chunks.count, Secrets.hex(hasher.finalize()) == content.contentHash else {
            unlink(url.path)
            throw NimbusError(.internalError, "the downloaded file does not hash to its version's content hash")
        }
        return url
    }

    func discard() {
        try? handle.close()
        unlink(url.path)
    }
}
