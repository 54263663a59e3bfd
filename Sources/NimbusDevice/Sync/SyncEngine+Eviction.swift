import Foundation
import NimbusCore

/// Evicting a synced file (its bytes leave the disk, a placeholder keeps its place and metadata) and
/// downloading it again when asked for, one at a time with the engine's rounds.
extension SyncEngine {
    /// Replaces the file at `path` (relative to the folder) with its placeholder. Only a file whose
    /// bytes are the server's current version is evicted, so nothing unsynced is ever dropped.
    package func evict(_ path: String) async throws {
        try await exclusively {
            let files = try await journal.localFiles()
            let stub = Placeholder.path(for: path)
            guard let file = files.first(where: { $0.path == path }) else {
                if files.contains(where: { $0.path == stub }) { return }  // evicted already
                throw NimbusError.notFound("\(path) is not a synced item on this device")
            }
            let url = folder.appendingPathComponent(path)
            guard let content = file.content, LocalScanner.stat(url.path, path: path)?.isFolder == false else {
                throw NimbusError.badRequest("\(path) is a folder or a package; evict the files it holds")
            }
            func unchanged() -> Bool {
                guard let now = LocalScanner.stat(url.path, path: path) else { return false }
                return now.inode == file.inode && now.size == file.size && now.modified == file.modified
            }
            let synced = try await journal.syncedItem(file.id)
            let current = try await journal.remoteItem(file.id)?.current?.content.contentHash
            guard synced?.content == content, current == content, unchanged() else {
                throw NimbusError(.conflict, "\(path) has changes that are not synced yet; it is evicted once they are")
            }
            // An app reading the file holds its coordination lock: the bytes stay until it is done.
            try await coordinated([path], exclusive: true) {
                // A placeholder left beside the file by an eviction cut short is stale.
                unlink(folder.appendingPathComponent(stub).path)
                let placeholder = Placeholder(name: LocalScanner.split(path).name, size: file.size, contentHash: content)
                let temporary = try writeTemporary(try placeholder.encoded())
                guard let written = LocalScanner.stat(temporary.path, path: stub), place(temporary, at: stub, replacing: nil)
                else {
                    unlink(temporary.path)
                    throw NimbusError(.conflict, "cannot write the placeholder of \(path)")
                }
                guard unchanged(), unlink(url.path) == 0 else {
                    unlink(folder.appendingPathComponent(stub).path)
                    throw NimbusError(.conflict, "\(path) changed while it was being evicted; it stays")
                }
                try await journal.setLocalFile(
                    LocalFile(
                        id: file.id, path: stub, inode: written.inode, size: written.size, modified: written.modified,
                        content: content))
            }
        }
    }

    /// Downloads the evicted file at `path` (relative to the folder) in place of its placeholder: the
    /// server's current version, written whole before it takes the name.
    package func download(_ path: String) async throws {
        try await exclusively {
            let files = try await journal.localFiles()
            let stub = Placeholder.path(for: path)
            guard let file = files.first(where: { $0.path == stub }) else {
                if files.contains(where: { $0.path == path }) { return }  // downloaded already
                throw NimbusError.notFound("\(path) is not an item on this device")
            }
            guard let version = try await journal.remoteItem(file.id)?.current else {
                throw NimbusError.notFound("\(path) is no longer on the server")
            }
            guard let (_, temporary) = try await download([(file.id, version.content)]).first else {
                throw NimbusError(.internalError, "the download of \(path) wrote nothing")
            }
            defer { unlink(temporary.path) }
            try synchronize([temporary])
            let written = try await coordinated([path], exclusive: true) {
                guard let written = LocalScanner.stat(temporary.path, path: path), place(temporary, at: path, replacing: nil)
                else {
                    throw NimbusError(.conflict, "something else is at \(path) now; the download waits for it to move")
                }
                unlink(folder.appendingPathComponent(stub).path)
                return written
            }
            try await journal.setLocalFile(
                LocalFile(
                    id: file.id, path: path, inode: written.inode, size: written.size, modified: written.modified,
                    content: version.content.contentHash))
        }
    }

    /// Writes `content` (a version of the item at `path`, of `kind`) into a new file or package in
    /// `directory`, for an app to put in the item's place (`FileVersion.replaceItem(at:)`).
    package func writeVersion(_ content: DocumentContent, kind: ItemKind, into directory: URL) async throws -> URL {
        try await exclusively {
            guard let (_, temporary) = try await download([(ItemID.random(), content)]).first else {
                throw NimbusError(.internalError, "the version's download wrote nothing")
            }
            defer { unlink(temporary.path) }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let target = directory.appendingPathComponent(DocumentNames.temporaryPrefix + "version-" + UUIDString.random())
            if kind == .package {
                try PackageArchive.unpack(temporary, into: target)
                try synchronize([target])
            } else {
                try synchronize([temporary])
                guard rename(temporary.path, target.path) == 0 else {
                    throw NimbusError(.internalError, "cannot write the version into \(directory.path)")
                }
            }
            return target
        }
    }
}
