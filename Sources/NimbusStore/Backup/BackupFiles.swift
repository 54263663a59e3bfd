import Crypto
import Foundation
import NimbusCore

/// The file operations backups are made of: copies that hash what they read and are durable before they
/// count, so a copy is either whole and checked or not there.
enum BackupFiles {
    private static let bufferSize = 1 << 20

    /// Copies `source` to a new file `target` (owner-only; it must not exist), synced; its size and SHA-256.
    static func copy(_ source: URL, to target: URL) throws -> (size: Int64, sha256: String) {
        let input = open(source.path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw posixError("cannot read \(source.path)") }
        defer { close(input) }
        let output = open(target.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw posixError("cannot create \(target.path)") }
        var closed = false
        defer { if !closed { close(output) } }
        let result = try stream(input) { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(output, bytes.baseAddress! + offset, bytes.count - offset)
                guard written > 0 else { throw posixError("cannot write \(target.path)") }
                offset += written
            }
        }
        guard fsync(output) == 0 else { throw posixError("cannot sync \(target.path)") }
        closed = true
        guard close(output) == 0 else { throw posixError("cannot write \(target.path)") }
        return result
    }

    /// The size and SHA-256 of `file`.
    static func digest(_ file: URL) throws -> (size: Int64, sha256: String) {
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

    /// Makes the names in `folder` (new files, renames) durable.
    static func synchronizeFolder(_ folder: URL) throws {
        let descriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw posixError("cannot open \(folder.path)") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw posixError("cannot sync \(folder.path)") }
    }

    static func synchronizeFile(_ file: URL) throws {
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw posixError("cannot open \(file.path)") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw posixError("cannot sync \(file.path)") }
    }

    /// An owner-only folder (0700), created with its parents when missing.
    static func makePrivateFolder(_ folder: URL) throws {
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Holds `flock` on `file` (created when missing) while `body` runs, waiting for it; `shared` lets other
    /// shared holders in.
    static func withLock<T>(_ file: URL, shared: Bool = false, _ body: () throws -> T) throws -> T {
        try lock(file, shared: shared, wait: true, body)!
    }

    /// Runs `body` holding an exclusive `flock` on `file`, or returns nil at once when another holds it.
    static func ifUnlocked<T>(_ file: URL, _ body: () throws -> T) throws -> T? {
        try lock(file, shared: false, wait: false, body)
    }

    private static func lock<T>(_ file: URL, shared: Bool, wait: Bool, _ body: () throws -> T) throws -> T? {
        let descriptor = open(file.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw posixError("cannot open \(file.path)") }
        defer { close(descriptor) }
        let operation = (shared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB)
        while flock(descriptor, operation) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK && !wait { return nil }
            throw posixError("cannot lock \(file.path)")
        }
        return try body()
    }

    static func posixError(_ context: String) -> any Error {
        let code = errno
        return NSError(
            domain: NSPOSIXErrorDomain, code: Int(code),
            userInfo: [NSLocalizedDescriptionKey: "\(context): \(String(cString: strerror(code)))"])
    }
}
