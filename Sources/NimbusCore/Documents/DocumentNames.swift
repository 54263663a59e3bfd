import Foundation

/// The rules for item names and the limits of a container's documents.
package enum DocumentNames {
    /// Bytes of UTF-8 in one name, as most file systems allow.
    package static let maxNameBytes = 255
    /// Folders an item can be nested in.
    package static let maxDepth = 64
    /// Entries of one user's container: items (live and in Recently Deleted), versions kept in their
    /// history, and chunks uploaded.
    package static let maxEntries = 1_000_000
    /// The largest file, as iCloud Drive's.
    package static let maxFileBytes: Int64 = 50 << 30
    /// Chunks in one version (a 50 GiB file in 4 MiB chunks, and some slack for smaller ones).
    package static let maxChunks = 40_000

    /// Refuses names no file system can hold: empty, `.`, `..`, with a slash, a NUL or another control
    /// character, or longer than 255 bytes.
    package static func validate(_ name: String) throws(NimbusError) {
        guard !name.isEmpty, name != ".", name != ".." else {
            throw .badRequest("an item's name must not be empty, \".\" or \"..\"")
        }
        guard name.utf8.count <= maxNameBytes else {
            throw .badRequest("the name \"\(name.prefix(40))…\" is longer than \(maxNameBytes) bytes")
        }
        let ascii = name.utf8.allSatisfy { $0 < 0x80 }
        guard
            ascii
                ? !name.utf8.contains(where: { $0 == 0x2F || $0 < 0x20 || $0 == 0x7F })
                : !name.unicodeScalars.contains(where: { $0 == "/" || $0.properties.generalCategory == .control })
        else {
            throw .badRequest("the name \"\(name.prefix(80))\" holds a slash or a control character, which names may not")
        }
        // Devices never sync such items (nor their own temporary files); one on the server would look
        // deleted on every device.
        guard !isExcludedFromSync(name) else { throw .badRequest("items named *.nosync are not synced") }
        guard !name.hasPrefix(temporaryPrefix) else {
            throw .badRequest("names starting with \(temporaryPrefix) are the sync engine's temporary files")
        }
        guard !isPlaceholderName(name) else {
            throw .badRequest("names like .\(name.dropFirst().dropLast(7)).icloud are evicted files' placeholders on devices")
        }
    }

    /// Names that file systems which ignore case and Unicode normalisation (Apple's, Windows') take
    /// for one name have one key.
    package static func collisionKey(_ name: String) -> String {
        // ASCII is its own normal form, and Foundation's normalisation is slow (a device folder's scan
        // computes a key for every name).
        if name.utf8.allSatisfy({ $0 < 0x80 }) { return name.lowercased() }
        return name.precomposedStringWithCanonicalMapping.lowercased()
    }

    /// Why the name would not work everywhere: characters Windows refuses, a trailing dot or space,
    /// a reserved device name. Such names are kept, and reported.
    package static func portabilityIssues(_ name: String) -> [String] {
        var issues: [String] = []
        let forbidden = name.filter { ":\\*?\"<>|".contains($0) }
        if !forbidden.isEmpty {
            issues.append(
                "holds \(String(Set(forbidden)).sorted().map { "\"\($0)\"" }.joined(separator: " ")), which Windows does not allow"
            )
        }
        if name.hasSuffix(".") || name.hasSuffix(" ") { issues.append("ends with a dot or a space, which Windows drops") }
        let stem = name.split(separator: ".", maxSplits: 1).first.map(String.init)?.uppercased() ?? ""
        if reservedStems.contains(stem) { issues.append("\(stem) is a device name on Windows") }
        return issues
    }

    private static let reservedStems = Set(["CON", "PRN", "AUX", "NUL"] + (1...9).flatMap { ["COM\($0)", "LPT\($0)"] })

    /// What the device's sync engine names its temporary files; no item may be named so.
    package static let temporaryPrefix = ".nimbus-"

    /// Whether a name is shaped like an evicted file's placeholder (`.<name>.icloud`), which devices write.
    package static func isPlaceholderName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(".icloud") && name.utf8.count > 8
    }

    /// Items named so are never synced (iCloud's rule).
    package static func isExcludedFromSync(_ name: String) -> Bool { name.hasSuffix(".nosync") }

    /// The `number`th free name Finder would pick for a copy: "Report 2.pages", "Notes 3".
    package static func numbered(_ name: String, _ number: Int) -> String {
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 } ?? name.endIndex
        var stem = String(name[..<dot])
        let tail = " \(number)" + name[dot...]
        // A name at the length limit gives up characters of its stem, so the numbered one fits too.
        while stem.utf8.count + tail.utf8.count > maxNameBytes, !stem.isEmpty { stem.removeLast() }
        return stem + tail
    }

    /// Whether `text` is a SHA-256 as the wire writes it: 64 lowercase hexadecimal characters.
    package static func isHash(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
