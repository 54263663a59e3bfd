import Foundation
import NimbusCore

/// An evicted file on the disk: `.<name>.icloud` beside where the file would be, as Apple's systems
/// wrote them, holding the item's metadata (a binary property list with Apple's name and size keys,
/// and the content hash of the version it stands for), so the item keeps its place, can be renamed,
/// moved or deleted like the file, and comes back when asked for.
package struct Placeholder: Equatable, Sendable {
    package var name: String
    package var size: Int64
    package var contentHash: String

    static let suffix = ".icloud"

    /// `.<name>.icloud` for a file called `name`.
    package static func fileName(for name: String) -> String { "." + name + suffix }

    /// The file's name a placeholder's file name stands for, or nil when it is no placeholder's.
    package static func itemName(of fileName: String) -> String? {
        guard fileName.hasPrefix("."), fileName.hasSuffix(suffix), fileName.count > 1 + suffix.count else { return nil }
        return String(fileName.dropFirst().dropLast(suffix.count))
    }

    /// Whether a relative path names a placeholder.
    package static func isPlaceholder(path: String) -> Bool {
        path.hasSuffix(suffix) && itemName(of: LocalScanner.split(path).name) != nil
    }

    /// The path of the file a placeholder's path stands for (a path that is no placeholder's, unchanged).
    package static func realPath(of placeholder: String) -> String {
        let (folder, name) = LocalScanner.split(placeholder)
        let real = itemName(of: name) ?? name
        return folder.isEmpty ? real : folder + "/" + real
    }

    /// A relative path with its last name turned into the placeholder's.
    package static func path(for path: String) -> String {
        let (folder, name) = LocalScanner.split(path)
        return folder.isEmpty ? fileName(for: name) : folder + "/" + fileName(for: name)
    }

    package func encoded() throws -> Data {
        try PropertyListSerialization.data(
            fromPropertyList: [
                "NSURLNameKey": name, "NSURLFileSizeKey": NSNumber(value: size),
                "NSURLFileResourceTypeKey": "NSURLFileResourceTypeRegular",
                "NimbusContentHash": contentHash,
            ], format: .binary, options: 0)
    }

    package init(name: String, size: Int64, contentHash: String) {
        self.name = name
        self.size = size
        self.contentHash = contentHash
    }

    /// Reads a placeholder; nil when the file is not one (too large, not a property list, no hash).
    package init?(contentsOf url: URL) {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
            ((attributes[.size] as? Int) ?? .max) <= 64 << 10, let data = FileManager.default.contents(atPath: url.path),
            let list = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
            let name = list["NSURLNameKey"] as? String, let hash = list["NimbusContentHash"] as? String,
            DocumentNames.isHash(hash)
        else { return nil }
        self.init(name: name, size: (list["NSURLFileSizeKey"] as? NSNumber)?.int64Value ?? 0, contentHash: hash)
    }
}
