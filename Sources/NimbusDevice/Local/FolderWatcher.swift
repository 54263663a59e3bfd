import Foundation
import Synchronization

/// Tells when anything changes under a folder, through inotify: a watch on every folder in it (added
/// again after each round, as folders come and go), read on a thread of its own.
package final class FolderWatcher: Sendable {
    private let descriptor: Int32
    private let watched = Mutex<[String: Int32]>([:])
    private let stopped = Atomic(false)
    private let onChange: @Sendable () -> Void

    package init(onChange: @escaping @Sendable () -> Void) throws {
        descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        self.onChange = onChange
        let thread = Thread { [self] in readEvents() }
        thread.name = "nimbus.folder-watcher"
        thread.start()
    }

    /// Watches `folder` and every folder inside it; whether any was not watched before (what changed in
    /// it before its watch was added went unnoticed, so it needs a look).
    @discardableResult package func watch(_ folder: URL) -> Bool {
        var added = false
        var pending = [folder.path]
        let mask =
            UInt32(IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF)
            | UInt32(IN_DONT_FOLLOW) | UInt32(IN_ONLYDIR)
        while let path = pending.popLast() {
            let handle = inotify_add_watch(descriptor, path, mask)
            if handle >= 0, watched.withLock({ $0.updateValue(handle, forKey: path) }) != handle { added = true }
            pending += Self.folders(in: path)
        }
        return added
    }

    /// The folders directly in `path`, from the entries' types as the directory lists them: an `lstat` of
    /// every file was most of a watch's cost (28 ms against 4 over 11,000 files). A link is not followed
    /// (one to `..` would watch the whole disk, or loop).
    private static func folders(in path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var found: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard name != "." && name != ".." else { continue }
            let child = path + "/" + name
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_DIR): found.append(child)
            case Int32(DT_UNKNOWN):
                // A file system that does not say: asked of the entry itself.
                var status = stat()
                if lstat(child, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { found.append(child) }
            default: break
            }
        }
        return found
    }

    package func stop() { stopped.store(true, ordering: .releasing) }

    private func readEvents() {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while !stopped.load(ordering: .acquiring) {
            // Woken at least twice a second to see whether it was stopped.
            guard poll(&poller, 1, 500) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { onChange() }
        }
        close(descriptor)
    }
}
