import Foundation

/// A file's details (`LocalScanner.Entry`) as a look at it finds them, with when its status last changed (`st_ctim`:
/// every write and every change of its times moves it, and no one can set it back), so a write that restores the
/// file's modification time still shows.
package struct FileLook: Equatable, Sendable {
    package let entry: LocalScanner.Entry
    /// Nanoseconds since 1970.
    package let changed: Int64

    package init(entry: LocalScanner.Entry, changed: Int64) {
        self.entry = entry
        self.changed = changed
    }

    /// The file at `path`, when it is the file open as `descriptor` (the same inode).
    package static func of(_ path: String, open descriptor: Int32) -> FileLook? {
        var (opened, status) = (stat(), stat())
        guard fstat(descriptor, &opened) == 0, lstat(path, &status) == 0, opened.st_ino == status.st_ino,
            let entry = LocalScanner.entry(status, path: "")
        else { return nil }
        return FileLook(entry: entry, changed: Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec))
    }

    /// How long after the file's last change a look must come for its details to show any later write: a file
    /// system stamps times from a clock that moves in ticks (a few milliseconds), and keeps them to its own
    /// granularity, so a second write within that leaves the details as they were. Times in whole seconds tell of
    /// one that keeps no finer (FAT keeps two).
    package var settlingTime: Int64 { changed % 1_000_000_000 == 0 ? 2_000_000_000 : 50_000_000 }

    /// Whether any write after `now` (nanoseconds since 1970) would show in the details.
    package func isSettled(at now: Int64 = FileLook.now()) -> Bool { now - changed > settlingTime }

    /// The wall clock the file system stamps times from, in nanoseconds since 1970.
    package static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
