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

    init(in folder: URL) throws { (url, handle) = try Self.create(in: folder) }

    /// A new empty file at the folder's root, under a name scans skip.
    static func create(in folder: URL) throws -> (URL, FileHandle) {
        let file = folder.appendingPathComponent(LocalScanner.temporaryPrefix + UUIDString.random())
        // Not FileManager.createFile, which writes through a second temporary file and syncs it.
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw NimbusError(.internalError, "cannot create \(file.path)") }
        return (file, FileHandle(fileDescriptor: descriptor, closeOnDealloc: true))
    }

    func append(_ bytes: Data, as chunk: DocumentChunk) throws {
        guard Secrets.hex(SHA256.hash(data: bytes)) == chunk.hash else {
            throw NimbusError(.internalError, "chunk \(chunk.hash) arrived with other bytes")
        }
        hasher.update(data: bytes)
        try handle.write(contentsOf: bytes)
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
