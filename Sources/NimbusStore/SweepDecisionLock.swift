import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Held while a sweep decides on and deletes one blob, and while `retain` touches one, so a file is either
/// swept already or touched before the sweep looks. Nodes sharing a blob directory are separate processes, so
/// besides a lock for this process's threads it holds an `flock` on a file beside the directory (an `flock` is
/// the open file's, shared by every thread of the process that opened it, so it cannot stand alone).
///
/// The file is made on first use, so a store that only reads (`nimbus check`) leaves the directory as it was.
final class SweepDecisionLock: Sendable {
    private let path: String
    /// The lock file's descriptor once opened; guarded by the lock itself for this process's threads.
    private let descriptor = Mutex<Int32?>(nil)

    /// The lock file beside `directory` (`blobs.deciding` for `blobs`).
    init(beside directory: URL) {
        path = directory.appendingPathExtension("deciding").path
    }

    deinit {
        if let opened = descriptor.withLock({ $0 }) { close(opened) }
    }

    func withLock<T>(_ body: () throws -> T) throws -> T {
        try descriptor.withLock { descriptor in
            if descriptor == nil {
                let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                guard opened >= 0 else { throw BackupFiles.posixError("cannot open \(path)") }
                descriptor = opened
            }
            let descriptor = descriptor!
            while flock(descriptor, LOCK_EX) != 0 {
                guard errno == EINTR else { throw BackupFiles.posixError("cannot lock the blob directory's sweep") }
            }
            defer { flock(descriptor, LOCK_UN) }
            return try body()
        }
    }
}
