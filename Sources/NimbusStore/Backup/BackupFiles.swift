import Crypto
import Foundation
import NimbusCore

/// The file operations backups are made of: copies that hash what they read and are durable before they
/// count, so a copy is either whole and checked or not there.
package enum BackupFiles {
    private static let bufferSize = 1 << 20

    /// Copies `source` to a new file `target` (owner-only; it must not exist), synced; its size and SHA-256.
    package static func copy(_ source: URL, to target: URL) throws -> (size: Int64, sha256: String) {
        let input = open(source.path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw posixError("cannot read \(source.path)") }
        defer { close(input) }
        let output = try create(target)
        var closed = false
        defer { if !closed { close(output) } }
        let result = try stream(input) { try write($0, to: output, path: target.path) }
        guard fsync(output) == 0 else { throw posixError("cannot sync \(target.path)") }
        closed = true
        guard close(output) == 0 else { throw posixError("cannot write \(target.path)") }
        return result
    }

    /// Writes all of `bytes` to the open file `descriptor` (`path` names it in errors).
    package static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            guard written > 0 else { throw posixError("cannot write \(path)") }
            offset += written
        }
    }

    /// A new file (owner-only; it must not exist), open for writing.
    package static func create(_ file: URL) throws -> Int32 {
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw posixError("cannot create \(file.path)") }
        return descriptor
    }

    /// The size and SHA-256 of `file`.
    package static func digest(_ file: URL) throws -> (size: Int64, sha256: String) {
        let input = open(file.path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw posixError("cannot read \(file.path)") }
        defer { close(input) }
        return try stream(input) { _ in }
    }

    private static func stream(_ input: Int32, _ each: (UnsafeRawBufferPointer) throws -> Void) throws -> (
        size: Int64, sha256: String
    ) {
        var hasher = SHA256()
        var size: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(input, buffer.baseAddress!, bufferSize)
            guard count >= 0 else { throw posixError("cannot read") }
            if count == 0 { break }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            hasher.update(bufferPointer: bytes)
            try each(bytes)
            size += Int64(count)
        }
        return (size, Secrets.hex(hasher.finalize()))
    }

    /// Copies those of `sources` that exist into `folder` (each a new file); the manifest's entries for them.
    package static func copyExisting(_ sources: [URL], into folder: URL) throws -> [BackupManifest.File] {
        try sources.filter { FileManager.default.fileExists(atPath: $0.path) }.map { source in
            let (size, sha256) = try copy(source, to: folder.appendingPathComponent(source.lastPathComponent))
            return BackupManifest.File(name: source.lastPathComponent, size: size, sha256: sha256)
        }
    }

    /// Copies the backup's `file` from `folder` into `target`, checking it against the manifest as it reads.
    package static func copyChecked(_ file: BackupManifest.File, from folder: URL, to target: URL) throws {
        let source = try backupFile(file, in: folder)
        try compare(file, to: copy(source, to: target.appendingPathComponent(file.name)), at: source)
    }

    /// Reads the backup's `file` in `folder` and checks it against the manifest.
    package static func check(_ file: BackupManifest.File, in folder: URL) throws {
        let source = try backupFile(file, in: folder)
        try compare(file, to: digest(source), at: source)
    }

    private static func backupFile(_ file: BackupManifest.File, in folder: URL) throws -> URL {
        // Names come from the manifest: only plain names, never a path out of the folder.
        guard !file.name.isEmpty, !file.name.contains("/"), !file.name.hasPrefix(".") else {
            throw BackupError(.damaged, "the manifest names a file \(file.name.debugDescription), which no backup writes")
        }
        let source = folder.appendingPathComponent(file.name)
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw BackupError(.incomplete, "\(source.path) is missing from the backup")
        }
        return source
    }

    private static func compare(_ file: BackupManifest.File, to actual: (size: Int64, sha256: String), at source: URL) throws {
        guard actual.size == file.size, actual.sha256 == file.sha256 else {
            throw BackupError(
                .damaged,
                "\(source.path) differs from the manifest (\(actual.size) bytes, SHA-256 \(actual.sha256); expected \(file.size), \(file.sha256))"
            )
        }
    }

    /// A file's size, or nil when there is none.
    static func size(of file: URL) -> Int64? {
        var status = stat()
        return stat(file.path, &status) == 0 ? Int64(status.st_size) : nil
    }

    /// Makes the names in `folder` (new files, renames) durable.
    package static func synchronizeFolder(_ folder: URL) throws {
        let descriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw posixError("cannot open \(folder.path)") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw posixError("cannot sync \(folder.path)") }
    }

    package static func synchronizeFile(_ file: URL) throws {
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw posixError("cannot open \(file.path)") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw posixError("cannot sync \(file.path)") }
    }

    /// An owner-only folder (0700), created with its parents when missing.
    package static func makePrivateFolder(_ folder: URL) throws {
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Holds `flock` on `file` (created when missing) while `body` runs, waiting for it; `shared` lets other
    /// shared holders in.
    static func withLock<T>(_ file: URL, shared: Bool = false, _ body: () throws -> T) throws -> T {
        try lock(file, shared: shared, wait: true, body)!
    }

    /// Holds `flock` on `file` (created when missing) while `body` runs, waiting for it off Swift's
    /// cooperative threads; `shared` lets other shared holders in.
    package static func holdingLock<T: Sendable>(_ file: URL, shared: Bool = false, _ body: () async throws -> T)
        async throws -> T
    {
        try await holdingLock(file, shared: shared, wait: true, body)!
    }

    /// Runs `body` holding an exclusive `flock` on `file`, or returns nil at once when another holds it.
    package static func holdingLockIfFree<T: Sendable>(_ file: URL, _ body: () async throws -> T) async throws -> T? {
        try await holdingLock(file, shared: false, wait: false, body)
    }

    private static func holdingLock<T: Sendable>(
        _ file: URL, shared: Bool, wait: Bool, _ body: () async throws -> T
    ) async throws -> T? {
        let descriptor = try await BlockingWork.run { try acquire(file, shared: shared, wait: wait) }
        guard let descriptor else { return nil }
        // The lock is the open file's, not a thread's: closing the descriptor releases it.
        defer { close(descriptor) }
        return try await body()
    }

    /// Runs `body` holding an exclusive `flock` on `file`, or returns nil at once when another holds it.
    static func ifUnlocked<T>(_ file: URL, _ body: () throws -> T) throws -> T? {
        try lock(file, shared: false, wait: false, body)
    }

    private static func lock<T>(_ file: URL, shared: Bool, wait: Bool, _ body: () throws -> T) throws -> T? {
        guard let descriptor = try acquire(file, shared: shared, wait: wait) else { return nil }
        defer { close(descriptor) }
        return try body()
    }

    /// Opens `file` (created when missing) and takes its `flock`, waiting for it unless `wait` is false; the
    /// open descriptor, whose closing releases the lock, or nil when another holds it and `wait` is false.
    private static func acquire(_ file: URL, shared: Bool, wait: Bool) throws -> Int32? {
        let descriptor = open(file.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw posixError("cannot open \(file.path)") }
        while flock(descriptor, (shared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB)) != 0 {
            let failure = errno
            if failure == EINTR { continue }
            let error = posixError("cannot lock \(file.path)")
            close(descriptor)
            if failure == EWOULDBLOCK && !wait { return nil }
            throw error
        }
        return descriptor
    }

    package static func posixError(_ context: String) -> any Error {
        let code = errno
        return NSError(
            domain: NSPOSIXErrorDomain, code: Int(code),
            userInfo: [NSLocalizedDescriptionKey: "\(context): \(String(cString: strerror(code)))"])
    }
}
