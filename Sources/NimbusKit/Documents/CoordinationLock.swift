import CFileOps
import Foundation
import NimbusCore

#if canImport(Glibc)
    import Glibc
#endif

/// The locks file coordination takes, shared by apps and the daemon of a device root: one byte of
/// `ROOT/.nimbus/coordination.lock` stands for each path (its hash), locked shared to read and exclusive to
/// write, with every folder above it locked shared, so that writing a folder (moving or deleting it) waits
/// for accesses inside it. Locks are open-file-description locks: the kernel keeps them per open of the
/// file, across processes and threads alike, and drops them when a process dies, so a crashed app never
/// leaves an item locked. They are taken in byte order, so two coordinations never wait on each other.
package final class CoordinationLock: Sendable {
    private let descriptor: Int32

    /// The lock file of the device root `root`.
    package static func file(root: URL) -> URL {
        root.appendingPathComponent(".nimbus").appendingPathComponent("coordination.lock")
    }

    /// Waits for and takes the locks for `accesses` (absolute paths under `root`; `exclusive` to write).
    package convenience init(root: URL, accesses: [(path: String, exclusive: Bool)]) throws {
        try self.init(root: root, accesses: accesses, waiting: true)!
    }

    /// Takes the locks for `accesses`, waiting for them only when `waiting`: without, nil when another holds one
    /// of them (and none is kept).
    private init?(root: URL, accesses: [(path: String, exclusive: Bool)], waiting: Bool) throws {
        var bytes: [Int64: Bool] = [:]
        let top = root.standardizedFileURL.path
        for access in accesses {
            bytes[Self.offset(access.path), default: false] = bytes[Self.offset(access.path)] == true || access.exclusive
            var folder = (access.path as NSString).deletingLastPathComponent
            while folder.hasPrefix(top + "/") {
                let offset = Self.offset(folder)
                if bytes[offset] == nil { bytes[offset] = false }
                folder = (folder as NSString).deletingLastPathComponent
            }
        }
        let path = Self.file(root: root).path
        var descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if descriptor < 0 && errno == ENOENT {
            mkdir((path as NSString).deletingLastPathComponent, 0o700)
            descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        }
        guard descriptor >= 0 else { throw UnixSocket.failure("cannot open the coordination lock \(path)") }
        for (offset, exclusive) in bytes.sorted(by: { $0.key < $1.key }) {
            while nimbus_lock_byte(descriptor, offset, exclusive ? 2 : 1, waiting ? 1 : 0) != 0 {
                if !waiting && (errno == EAGAIN || errno == EACCES) {
                    close(descriptor)
                    return nil
                }
                guard errno == EINTR else {
                    let failure = UnixSocket.failure("cannot lock \(path)")
                    close(descriptor)
                    throw failure
                }
            }
        }
        self.descriptor = descriptor
    }

    /// `init`, waiting on a thread of its own (never blocking Swift's cooperative pool). Locks no one holds are
    /// taken on the calling thread: a sync engine takes one for every file it reads or places, and a thread
    /// started for each cost each daemon ~0.1 ms of CPU a file (`BENCHMARKS.md`).
    package static func acquire(root: URL, accesses: [(path: String, exclusive: Bool)]) async throws -> CoordinationLock {
        if let free = try CoordinationLock(root: root, accesses: accesses, waiting: false) { return free }
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try CoordinationLock(root: root, accesses: accesses) })
            }
        }
    }

    /// Releases every lock taken.
    deinit { close(descriptor) }

    /// A path's byte: 40 bits of its FNV-1a hash (a collision only makes two paths wait for each other).
    static func offset(_ path: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return Int64(hash & 0xFF_FFFF_FFFF)
    }
}
