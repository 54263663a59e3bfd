import Crypto
import Foundation
import NimbusCore

/// Reads the container's folder into the local tree. Items keep their IDs across renames and moves by
/// their inode (a file also by its size and time: `isSameFile`), and across a save that replaces the file
/// (a new inode at the same path) by their path;
/// a file's content hash is computed again only when its size or modification time changed. A folder
/// whose extension is one of the container's package extensions is one item, a file package.
package struct LocalScanner: Sendable {
    package let folder: URL
    /// Lowercased extensions of folders that are file packages (`pages`).
    package let packageExtensions: Set<String>

    package init(folder: URL, packageExtensions: Set<String> = []) {
        self.folder = folder
        self.packageExtensions = packageExtensions
    }

    /// Whether a folder of this name is a file package.
    func isPackage(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        return packageExtensions.contains(name[name.index(after: dot)...].lowercased())
    }

    /// Names the engine writes while it works (temporary downloads, items stepping aside), never synced.
    static let temporaryPrefix = DocumentNames.temporaryPrefix

    package struct Scan: Sendable, LocalFileTable {
        package let tree: SyncTree
        /// Each item's file as listed (its path, and the details its hash was read with), sharing the tree's keys
        /// and slots: at 100,000 files a table of its own, with each item's ID and hash again, was 10 MB of a round's peak.
        package let files: ItemTable<Entry>

        /// `entries` in the order of the tree's items.
        init(tree: SyncTree, entries: [Entry]) {
            self.tree = tree
            self.files = tree.items.with(entries)
        }

        package var count: Int { files.count }

        package func position(of id: ItemID) -> Int? { files.position(of: id) }

        /// The item's file as the journal records it.
        package func file(_ id: ItemID) -> LocalFile? {
            files.position(of: id).map(file(at:))
        }

        /// The file of the item at `position` in the tree (and in `files`).
        package func file(at position: Int) -> LocalFile {
            let entry = files.values[position]
            return LocalFile(
                id: files.keys[position], path: entry.path, inode: entry.inode, size: entry.size, modified: entry.modified,
                contentKey: tree.items.values[position].contentKey)
        }
    }

    package func scan(known: [LocalFile]) throws -> Scan {
        // Positions in `known`, not copies of its files: at 100,000 files copies were 45 MB of a round's peak.
        let byInode = PositionIndex(count: known.count) { Int(truncatingIfNeeded: known[$0].inode) }
        let byPath = PositionIndex(count: known.count) { known[$0].path.hashValue }
        func knownFile(atPath path: String) -> LocalFile? {
            byPath.first(path.hashValue) { known[$0].path == path }.map { known[$0] }
        }
        var tree = SyncTree()
        var files: [Entry] = []
        // Sized for what the journal knew, which most rounds find again: grown as it fills, a table of 100,000 items
        // is held twice while it moves to its last size.
        tree.items.reserveCapacity(known.count)
        files.reserveCapacity(known.count)
        // Listed a folder at a time, parents before what they hold: a list of every entry at once was 6 MB of a
        // round's peak at 100,000 files.
        var folders: [(path: String, id: ItemID?)] = [("", nil)]
        var next = 0
        while next < folders.count {
            let (folderPath, parent) = folders[next]
            next += 1
            let entries = try listing(folderPath, sharing: { knownFile(atPath: $0)?.path })
            let filesBesidePlaceholders = Self.filesBesidePlaceholders(entries.lazy.map(\.entry))
            for (entryName, entry) in entries {
                var name = entryName
                let placeholder = entry.isFolder ? nil : Placeholder.itemName(of: name)
                if let real = placeholder {
                    // A placeholder beside its file is left over from an eviction or download cut short: the file is the item.
                    guard (try? DocumentNames.validate(real)) != nil,
                        !filesBesidePlaceholders.contains(Placeholder.realPath(of: entry.path))
                    else {
                        continue
                    }
                    name = real
                }
                let isPackage = entry.isFolder && isPackage(name)
                var entry = entry
                // A package that cannot be read now (an app saving into it, say) keeps what was known of it.
                let details = isPackage ? try? PackageArchive.details(of: folder.appendingPathComponent(entry.path)) : nil
                if let details { (entry.size, entry.modified) = details }
                let isPlainFolder = entry.isFolder && !isPackage
                let moved = byInode.first(Int(truncatingIfNeeded: entry.inode)).map { known[$0] }.flatMap { file in
                    Self.isSameFile(file, as: entry, isPlainFolder: isPlainFolder) ? file : nil
                }
                // The first of these that no entry scanned before took (that entry is in the tree already), each looked
                // for only when the ones before are not it: a round scans every file, and most are found by inode.
                func untaken(_ file: LocalFile?) -> LocalFile? {
                    file.flatMap { tree[$0.id] == nil && ($0.contentKey == nil) == isPlainFolder ? $0 : nil }
                }
                // An eviction or download cut short leaves the other form of the path than the journal knows.
                let previous =
                    untaken(moved) ?? untaken(knownFile(atPath: entry.path))
                    ?? untaken(
                        knownFile(
                            atPath: placeholder != nil ? Placeholder.realPath(of: entry.path) : Placeholder.path(for: entry.path))
                    )
                let id = previous?.id ?? ItemID.random()
                var content: ContentKey?
                if isPackage {
                    let unchanged = previous.map {
                        $0.inode == entry.inode && $0.size == entry.size && $0.modified == entry.modified
                    }
                    if details != nil, unchanged != true {
                        content = (try? PackageArchive.hash(of: folder.appendingPathComponent(entry.path))).map(ContentKey.init)
                    }
                    content = content ?? previous?.contentKey
                    guard content != nil else { continue }
                } else if !entry.isFolder {
                    if let previous, previous.inode == entry.inode, previous.size == entry.size,
                        previous.modified == entry.modified
                    {
                        content = previous.contentKey
                    } else if placeholder != nil {
                        // A placeholder written over is not read as content: the item stays as the journal knew it.
                        guard
                            let read = (Placeholder(contentsOf: folder.appendingPathComponent(entry.path))?.contentHash)
                                .map(ContentKey.init) ?? previous?.contentKey
                        else { continue }
                        content = read
                    } else {
                        content = ContentKey(
                            try FileContent.hash(of: folder.appendingPathComponent(entry.path), upTo: entry.size))
                    }
                } else {
                    // Its contents are listed in turn (a package's are its content, not items of its own).
                    folders.append((entry.path, id))
                }
                tree[id] = SyncItem(
                    place: Place(parent: parent, name: name), kind: isPackage ? .package : entry.isFolder ? .folder : .file,
                    contentKey: content)
                files.append(entry)
            }
        }
        return Scan(tree: tree, entries: files)
    }

    /// The entries' paths that a placeholder's real path names, so a placeholder beside its file is told apart: a
    /// set of only these rather than of every path (at 100,000 files, 4 MB of a round's peak).
    static func filesBesidePlaceholders(_ entries: some Collection<Entry>) -> Set<String> {
        let realPaths = Set(
            entries.lazy.filter { !$0.isFolder && Placeholder.isPlaceholder(path: $0.path) }.map {
                Placeholder.realPath(of: $0.path)
            })
        guard !realPaths.isEmpty else { return [] }
        return Set(entries.lazy.map(\.path).filter(realPaths.contains))
    }

    /// Whether `known`, the file the journal knew with the entry's inode, is the entry: at its path, or moved
    /// there. A rename keeps a file's size and modification time, so a file known elsewhere with others is
    /// another file whose inode the system gave out again (a folder restored by copying, a file deleted and
    /// another written): taken as moved, it would give the entry that file's identity and history. Folders
    /// change their time as their contents change, so a folder is taken by its inode alone.
    static func isSameFile(_ known: LocalFile, as entry: Entry, isPlainFolder: Bool) -> Bool {
        known.path == entry.path || isPlainFolder || (known.size == entry.size && known.modified == entry.modified)
    }

    /// A relative path's folder part ("" at the top) and last name (Foundation's `NSString` path calls
    /// trapped on some names here).
    static func split(_ path: String) -> (folder: String, name: String) {
        // In UTF-8 bytes: a search by characters weighs grapheme boundaries, a tenth of an unchanged scan's time.
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return ("", path) }
        return (String(path[..<slash]), String(path[path.utf8.index(after: slash)...]))
    }

    package struct Entry: Sendable, Equatable {
        package var path: String
        package var isFolder: Bool
        package var inode: UInt64
        package var size: Int64
        package var modified: Int64
    }

    /// The files and folders in the folder at `relative` ("" for the top), by name, skipping what is not synced:
    /// names ending in `.nosync`, the engine's temporary names, names no server would take (control characters,
    /// over 255 bytes; `nimbus device status` says why), and anything but regular files and folders.
    /// `known(path)` gives the journal's copy of a path it holds, which the entry takes instead of its own: at 100,000
    /// files, two copies of every path were 10 MB of a round's peak.
    private func listing(_ relative: String, sharing known: (String) -> String?) throws -> [(name: String, entry: Entry)] {
        // Paths are joined as strings: a URL's `appendingPathComponent` for every file was as costly as the `lstat`
        // calls themselves.
        let directory = try Directory(relative.isEmpty ? folder.path : folder.path + "/" + relative)
        var found: [(name: String, entry: Entry)] = []
        for name in try directory.names().sorted() {
            let valid = (try? DocumentNames.validate(name)) != nil
            guard valid || DocumentNames.isPlaceholderName(name) else { continue }
            let joined = relative.isEmpty ? name : relative + "/" + name
            let path = known(joined) ?? joined
            // Placeholders' names are reserved for files, which `scan` reads as the items they stand for.
            guard let entry = directory.stat(name, path: path), valid || !entry.isFolder else { continue }
            found.append((name, entry))
        }
        return found
    }

    /// A folder open for listing, its entries looked up by name in it: an `lstat` of a whole path walks every
    /// folder above the entry again (an unchanged scan of 11,000 files took 10–14% longer so).
    private final class Directory {
        private let stream: OpaquePointer

        init(_ path: String) throws {
            let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0, let stream = fdopendir(descriptor) else {
                let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                if descriptor >= 0 { close(descriptor) }
                throw error
            }
            self.stream = stream
        }

        deinit { closedir(stream) }

        /// The names of its entries, but "." and "..".
        func names() throws -> [String] {
            var names: [String] = []
            while true {
                errno = 0
                guard let entry = readdir(stream) else {
                    guard errno == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                    return names
                }
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { names.append(name) }
            }
        }

        /// The entry `name` in it, as `LocalScanner.stat` reads one.
        func stat(_ name: String, path: String) -> Entry? {
            var status = Foundation.stat()
            guard fstatat(dirfd(stream), name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
            return LocalScanner.entry(status, path: path)
        }
    }

    static func stat(_ absolute: String, path: String) -> Entry? {
        var status = Foundation.stat()
        guard lstat(absolute, &status) == 0 else { return nil }
        return entry(status, path: path)
    }

    /// A regular file's or folder's details; nil for anything else.
    static func entry(_ status: Foundation.stat, path: String) -> Entry? {
        let type = status.st_mode & S_IFMT
        guard type == S_IFREG || type == S_IFDIR else { return nil }
        let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        return Entry(
            path: path, isFolder: type == S_IFDIR, inode: UInt64(status.st_ino), size: Int64(status.st_size), modified: modified)
    }
}
