import Crypto
import Foundation
import NimbusCore

/// A file package (a folder such as `Essay.pages` that apps treat as one document) as the one stream of
/// bytes that is versioned, chunked and synced: a header line, then every folder and file inside it in
/// order of their paths — a type byte (`D` or `F`), the path's length (2 bytes big-endian) and UTF-8
/// bytes, and for a file its size (8 bytes big-endian) and bytes. The same package always makes the same
/// stream, so its hash says whether it changed, and an edit to one file inside it changes only the chunks
/// around that file.
package enum PackageArchive {
    static let header = Data("NIMBUSPKG1\n".utf8)
    /// Entries a package may hold, and the depth of its folders.
    static let maxEntries = 100_000

    /// The package's size (its files' bytes) and latest modification (of it or anything in it, in
    /// nanoseconds): when neither changed, neither did its content.
    static func details(of package: URL) throws -> (size: Int64, modified: Int64) {
        var size: Int64 = 0
        var modified = LocalScanner.stat(package.path, path: "")?.modified ?? 0
        for (relative, isFolder) in try entries(of: package) {
            guard let entry = LocalScanner.stat(package.appendingPathComponent(relative).path, path: relative) else { continue }
            if !isFolder { size += entry.size }
            modified = max(modified, entry.modified)
        }
        return (size, modified)
    }

    /// SHA-256 of the package's stream.
    package static func hash(of package: URL) throws -> String {
        var hasher = SHA256()
        try write(package) { hasher.update(data: $0) }
        return Secrets.hex(hasher.finalize())
    }

    /// Writes the package's stream to `archive`; its SHA-256.
    package static func pack(_ package: URL, into archive: FileHandle) throws -> String {
        var hasher = SHA256()
        try write(package) { bytes in
            hasher.update(data: bytes)
            try archive.write(contentsOf: bytes)
        }
        return Secrets.hex(hasher.finalize())
    }

    private static func write(_ package: URL, to output: (Data) throws -> Void) throws {
        try output(header)
        for (relative, isFolder) in try entries(of: package) {
            let path = Data(relative.utf8)
            var head = Data([isFolder ? UInt8(ascii: "D") : UInt8(ascii: "F")])
            withUnsafeBytes(of: UInt16(path.count).bigEndian) { head.append(contentsOf: $0) }
            head.append(path)
            guard !isFolder else {
                try output(head)
                continue
            }
            let handle = try FileHandle(forReadingFrom: package.appendingPathComponent(relative))
            defer { try? handle.close() }
            let size = try handle.seekToEnd()
            try handle.seek(toOffset: 0)
            withUnsafeBytes(of: size.bigEndian) { head.append(contentsOf: $0) }
            try output(head)
            var left = size
            while left > 0, let bytes = try handle.read(upToCount: Int(min(left, UInt64(FileContent.readSize)))), !bytes.isEmpty {
                try output(bytes)
                left -= UInt64(bytes.count)
            }
            guard left == 0 else { throw NimbusError(.conflict, "\(relative) changed while its package was read") }
        }
    }

    /// Every folder and regular file inside the package, by relative path in order (symbolic links and
    /// other special files are not part of it).
    static func entries(of package: URL) throws -> [(path: String, isFolder: Bool)] {
        var found: [(String, Bool)] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? package : package.appendingPathComponent(relative)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let path = relative.isEmpty ? name : relative + "/" + name
                guard let entry = LocalScanner.stat(package.appendingPathComponent(path).path, path: path) else { continue }
                found.append((path, entry.isFolder))
                if entry.isFolder { pending.append(path) }
                guard found.count <= maxEntries else {
                    throw NimbusError.badRequest("a package holds at most \(maxEntries) files and folders")
                }
            }
        }
        return found.sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
    }

    /// Rebuilds a package from its stream into `directory` (which must not exist), refusing any path that
    /// would leave it.
    package static func unpack(_ archive: URL, into directory: URL) throws {
        let handle = try FileHandle(forReadingFrom: archive)
        defer { try? handle.close() }
        func read(_ count: Int) throws -> Data {
            guard count > 0 else { return Data() }
            guard let bytes = try handle.read(upToCount: count), bytes.count == count else {
                throw NimbusError(.internalError, "the package's stream ends early")
            }
            return bytes
        }
        func number(_ bytes: Data) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }
        guard try read(header.count) == header else { throw NimbusError(.internalError, "not a package's stream") }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        var entries = 0
        while let type = try handle.read(upToCount: 1), let kind = type.first {
            entries += 1
            let path = String(decoding: try read(Int(number(try read(2)))), as: UTF8.self)
            let components = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard entries <= maxEntries, !path.isEmpty,
                components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.contains("\u{0}") })
            else { throw NimbusError(.internalError, "the package's stream names a path it may not: \(path.prefix(200))") }
            let url = directory.appendingPathComponent(path)
            switch kind {
            case UInt8(ascii: "D"):
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            case UInt8(ascii: "F"):
                var left = number(try read(8))
                let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else { throw NimbusError(.internalError, "cannot create \(url.path)") }
                let output = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
                defer { try? output.close() }
                while left > 0 {
                    let bytes = try read(Int(min(left, UInt64(FileContent.readSize))))
                    try output.write(contentsOf: bytes)
                    left -= UInt64(bytes.count)
                }
            default:
                throw NimbusError(.internalError, "the package's stream holds an entry of unknown type")
            }
        }
    }
}
