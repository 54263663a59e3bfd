import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Held while a sweep decides on and deletes one blob, and while `retain` touches one, so a file is either
/// swept already or touched before the sweep looks. Nodes sharing a blob directory are separate processes, so
/// besides a lock for this process's threads it holds an `flock` on a file beside the directory (an `flock` is
/// the open file's, shared by every thread of the process that opened it, so it cannot stand alone).
final class SweepDecisionLock: Sendable {
    private let threads = NSLock()
    private let descriptor: Int32

    /// The lock file beside `directory` (`blobs.deciding` for `blobs`).
    init(beside directory: URL) throws {
        let path = directory.appendingPathExtension("deciding").path
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw BackupFiles.posixError("cannot open \(path)") }
    }

    deinit { close(descriptor) }

    func withLock<T>(_ body: () throws -> T) throws -> T {
        try threads.withLock {
            while flock(descriptor, LOCK_EX) != 0 {
                guard errno == EINTR else { throw BackupFiles.posixError("cannot lock the blob directory's sweep") }
            }
            defer { flock(descriptor, LOCK_UN) }
            return try body()
        }
    }
}
