import Foundation

/// What the kernel says of file locks, for tests that must know a lock request is waiting rather than
/// guess it from a pause.
public enum FileLocks {
    /// Whether a lock request on `file` is waiting for another holder: a blocked request, "->" in
    /// `/proc/locks` ("1: -> OFDLCK ADVISORY WRITE -1 08:01:1234 5 5", the file named by device and inode).
    public static func isAwaited(on file: String) -> Bool {
        var status = stat()
        guard stat(file, &status) == 0, let table = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/locks")),
            let bytes = try? table.readToEnd()
        else { return false }
        // Read to the end: Foundation's `String(contentsOfFile:)` stops at the first page of a proc file
        // (size 0), and a loaded machine's table is many pages long.
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.contains("->") && fields.contains { $0.hasSuffix(":\(status.st_ino)") }
        }
    }
}
