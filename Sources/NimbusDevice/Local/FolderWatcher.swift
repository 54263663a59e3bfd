import Foundation
import NimbusCore
import Synchronization

/// Tells when anything changes under a folder, through inotify: a watch on every folder in it (added
/// again after each round, as folders come and go), read on a thread of its own. Changes no scan would see
/// (names of the engine's and apps' temporary files) and the engine's own placements (`OwnChanges`) are
/// not reported.
package final class FolderWatcher: Sendable {
    private let descriptor: Int32
    /// Watched folders by path, and their paths by watch (events name the watch).
    private let watched = Mutex<(handles: [String: Int32], paths: [Int32: String])>(([:], [:]))
    private let stopped = Atomic(false)
    private let ownChanges: OwnChanges?
    private let onChange: @Sendable () -> Void

    package init(ignoring ownChanges: OwnChanges? = nil, onChange: @escaping @Sendable () -> Void) throws {
        descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        self.ownChanges = ownChanges
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
            if handle >= 0 {
                let previous: Int32? = watched.withLock { watched in
                    watched.paths[handle] = path
                    return watched.handles.updateValue(handle, forKey: path)
                }
                if previous != handle { added = true }
            }
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
            if count > 0, buffer.withUnsafeBytes({ reportsChange(Array($0.prefix(count))) }) { onChange() }
        }
        close(descriptor)
    }

    /// Whether any of the events read (`struct inotify_event`s, each a header and its padded name) is a
    /// change a scan would see that the engine did not announce. Anything not understood is reported.
    private func reportsChange(_ events: [UInt8]) -> Bool {
        let header = MemoryLayout<inotify_event>.size
        var reports = false
        var offset = 0
        while offset + header <= events.count {
            let (handle, mask, length) = events.withUnsafeBytes { bytes in
                (
                    bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                    bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                    Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                )
            }
            let nameBytes = events[(offset + header)..<min(offset + header + length, events.count)]
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            offset += header + length
            // Every event of one read is looked at, so each announcement its rename made is used up.
            if !isUnseen(handle: handle, mask: mask, name: name) { reports = true }
        }
        return reports || offset != events.count
    }

    /// Whether an event is of what scans skip (a temporary file's name) or an announced placement: a file
    /// renamed into place, or a folder made.
    private func isUnseen(handle: Int32, mask: UInt32, name: String) -> Bool {
        guard !name.isEmpty else { return false }
        if name.hasPrefix(DocumentNames.temporaryPrefix) { return true }
        guard let ownChanges, let folder = watched.withLock({ $0.paths[handle] }) else { return false }
        if mask & UInt32(IN_MOVED_TO) != 0 { return ownChanges.take(folder + "/" + name) }
        if mask & UInt32(IN_CREATE) != 0 && mask & UInt32(IN_ISDIR) != 0 { return ownChanges.takeFolder(folder + "/" + name) }
        return false
    }
}
