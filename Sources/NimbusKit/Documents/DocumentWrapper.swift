import Foundation
import NimbusCore

/// A document's contents as `Document` reads and writes them (`FileWrapper`): a regular file's bytes, or
/// a file package — a folder of named files and folders that syncs as one item.
public indirect enum DocumentWrapper: Hashable, Sendable {
    case regularFile(Data)
    case directory([String: DocumentWrapper])

    /// The bytes of a regular file (nil for a package).
    public var regularFileContents: Data? {
        if case .regularFile(let data) = self { return data }
        return nil
    }

    /// A package's entries (nil for a regular file).
    public var fileWrappers: [String: DocumentWrapper]? {
        if case .directory(let entries) = self { return entries }
        return nil
    }

    /// What is at `url`: a folder is read as a package, whole.
    public init(contentsOf url: URL) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else {
            throw NimbusError.notFound("nothing at \(url.path)")
        }
        guard isFolder.boolValue else {
            self = .regularFile(try Data(contentsOf: url))
            return
        }
        var entries: [String: DocumentWrapper] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: url.path) {
            entries[name] = try DocumentWrapper(contentsOf: url.appendingPathComponent(name))
        }
        self = .directory(entries)
    }

    /// Writes it at `url` (nothing may be there), each file synced to the disk.
    func write(to url: URL) throws {
        switch self {
        case .regularFile(let data):
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw NimbusError(.internalError, "cannot create \(url.path)")
            }
            let handle = try FileHandle(forWritingTo: url)
            defer { try? handle.close() }
            try handle.write(contentsOf: data)
            try handle.synchronize()
        case .directory(let entries):
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            for (name, entry) in entries {
                guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                    throw NimbusError.badRequest("\(name) cannot name an entry of a package")
                }
                try entry.write(to: url.appendingPathComponent(name))
            }
        }
    }
}
