import Crypto
import Foundation
import NIOCore
import NimbusCore

/// Blobs copied through the blob seam between a blob store (a folder or a bucket) and a backup
/// destination's shared folder: each hashed as it is read, and durable before it counts.
package enum BackupBlobs {
    /// Blobs copied at once: a bucket answers each request after a round trip.
    private static let copiesInFlight = 8

    /// Copies every finished blob of `store` the destination lacks into its blob folder; returns them all, with
    /// sizes and SHA-256s (those of blobs copied before from the manifests that list them, not read again).
    package static func copy(from store: any BlobStore, to destination: BackupDestination) async throws
        -> [BackupManifest.File]
    {
        let known = try destination.knownBlobs()
        let folder = destination.blobs
        var files: [BackupManifest.File] = []
        try await store.list { page in
            for start in stride(from: 0, to: page.count, by: copiesInFlight) {
                try await withThrowingTaskGroup(of: BackupManifest.File.self) { group in
                    for blob in page[start..<min(start + copiesInFlight, page.count)] {
                        group.addTask { try await copy(blob, from: store, into: folder, known: known[blob.id]) }
                    }
                    for try await file in group { files.append(file) }
                }
            }
        }
        try await BlockingWork.run { try BackupFiles.synchronizeFolder(folder) }
        return files.sorted { $0.name < $1.name }
    }

    private static func copy(
        _ blob: StoredBlobSize, from store: any BlobStore, into folder: URL, known: BackupManifest.File?
    ) async throws -> BackupManifest.File {
        let target = folder.appendingPathComponent(blob.id)
        if let known, known.size == blob.size, BackupFiles.size(of: target) == blob.size { return known }
        // File work runs off Swift's cooperative threads: a server takes backups too (`serve --backup-every`).
        if known == nil, BackupFiles.size(of: target) == blob.size {
            // Left by a backup that did not finish: whole (it was renamed into place once synced), so read it.
            let (size, sha256) = try await BlockingWork.run { try BackupFiles.digest(target) }
            return BackupManifest.File(name: blob.id, size: size, sha256: sha256)
        }
        let incoming = folder.appendingPathComponent(BackupDestination.partialPrefix + blob.id)
        let output = try await BlockingWork.run {
            try? FileManager.default.removeItem(at: incoming)
            return try BackupFiles.create(incoming)
        }
        defer { close(output) }
        var hasher = SHA256()
        var size: Int64 = 0
        try await store.read(blob.id, range: nil) { piece in
            piece.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            size += Int64(piece.readableBytes)
            try await BlockingWork.run {
                try piece.withUnsafeReadableBytes { try BackupFiles.write($0, to: output, path: incoming.path) }
            }
        }
        try await BlockingWork.run {
            guard fsync(output) == 0 else { throw BackupFiles.posixError("cannot sync \(incoming.path)") }
            guard rename(incoming.path, target.path) == 0 else {
                throw BackupFiles.posixError("cannot rename \(incoming.path)")
            }
        }
        return BackupManifest.File(name: blob.id, size: size, sha256: Secrets.hex(hasher.finalize()))
    }

    /// Writes into `store` each of `blobs` it lacks, from the destination's blob folder, checking every byte
    /// against the manifest before the blob is kept: a damaged or missing one throws and is not written.
    /// A blob the store holds at the manifest's size is left as it is (a blob never changes under its id).
    package static func restore(
        _ blobs: [BackupManifest.File], from destination: BackupDestination, into store: any BlobStore
    ) async throws {
        for start in stride(from: 0, to: blobs.count, by: 1000) {
            let page = blobs[start..<min(start + 1000, blobs.count)]
            let stored = try await store.sizes(page.map(\.name))
            let missing = page.filter { stored[$0.name] != $0.size }
            for first in stride(from: missing.startIndex, to: missing.endIndex, by: copiesInFlight) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for blob in missing[first..<min(first + copiesInFlight, missing.endIndex)] {
                        group.addTask { try await restore(blob, from: destination.blobs, into: store) }
                    }
                    try await group.waitForAll()
                }
            }
        }
    }

    private static func restore(_ blob: BackupManifest.File, from folder: URL, into store: any BlobStore) async throws {
        guard LocalBlobStore.isBlobName(blob.name) else {
            throw BackupError(
                .damaged, "the manifest names a blob \(blob.name.prefix(80).debugDescription), which no store holds")
        }
        let source = folder.appendingPathComponent(blob.name)
        guard let input = FileHandle(forReadingAtPath: source.path) else {
            throw BackupError(.incomplete, "\(source.path) is missing from the backup")
        }
        defer { try? input.close() }
        let writer = try await store.makeWriter(restoring: blob.name, maxBytes: blob.size)
        do {
            var hasher = SHA256()
            var size: Int64 = 0
            while let bytes = try input.read(upToCount: 1 << 20), !bytes.isEmpty {
                hasher.update(data: bytes)
                size += Int64(bytes.count)
                guard size <= blob.size else { break }
                try await writer.write(bytes)
            }
            let sha256 = Secrets.hex(hasher.finalize())
            guard size == blob.size, sha256 == blob.sha256 else {
                throw BackupError(
                    .damaged,
                    "\(source.path) differs from the manifest (SHA-256 \(sha256); expected \(blob.size) bytes, \(blob.sha256))")
            }
            _ = try await writer.finish()
        } catch {
            await writer.discard()
            throw error
        }
    }
}
