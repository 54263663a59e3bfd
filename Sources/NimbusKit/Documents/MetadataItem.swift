import Foundation
import NimbusCore

/// An item of a ubiquity container as a `MetadataQuery` lists it (`NSMetadataItem`): where it is, its
/// size and dates, and how far it is synced. Items not downloaded yet are listed too.
public struct MetadataItem: Codable, Sendable, Hashable, Identifiable {
    /// Whether the item's bytes are on this device, and whether they are the latest.
    public enum DownloadingStatus: String, Codable, Sendable {
        /// Only a placeholder is here (`NSMetadataUbiquitousItemDownloadingStatusNotDownloaded`).
        case notDownloaded = "NSMetadataUbiquitousItemDownloadingStatusNotDownloaded"
        /// A version is here, but not the server's latest (`…Downloaded`).
        case downloaded = "NSMetadataUbiquitousItemDownloadingStatusDownloaded"
        /// The latest version is here (`…Current`).
        case current = "NSMetadataUbiquitousItemDownloadingStatusCurrent"
    }

    /// The attribute names predicates and sort descriptors use: Spotlight's and `NSMetadataItem`'s own.
    public enum Key {
        public static let fsName = "kMDItemFSName"
        public static let displayName = "kMDItemDisplayName"
        public static let path = "kMDItemPath"
        public static let url = "kMDItemURL"
        public static let fsSize = "kMDItemFSSize"
        public static let fsCreationDate = "kMDItemFSCreationDate"
        public static let fsContentChangeDate = "kMDItemFSContentChangeDate"
        /// The name's extension, lowercased, without the dot.
        public static let fileExtension = "NimbusMetadataItemFileExtensionKey"
        public static let isDirectory = "NimbusMetadataItemIsDirectoryKey"
        public static let downloadingStatus = "NSMetadataUbiquitousItemDownloadingStatusKey"
        public static let isDownloading = "NSMetadataUbiquitousItemIsDownloadingKey"
        public static let isUploading = "NSMetadataUbiquitousItemIsUploadingKey"
        public static let isUploaded = "NSMetadataUbiquitousItemIsUploadedKey"
        public static let percentDownloaded = "NSMetadataUbiquitousItemPercentDownloadedKey"
        public static let percentUploaded = "NSMetadataUbiquitousItemPercentUploadedKey"
        public static let downloadingError = "NSMetadataUbiquitousItemDownloadingErrorKey"
        public static let uploadingError = "NSMetadataUbiquitousItemUploadingErrorKey"
        public static let hasUnresolvedConflicts = "NSMetadataUbiquitousItemHasUnresolvedConflictsKey"
    }

    /// Stable across renames and moves (the server's item ID, or the device's for an item not uploaded yet).
    public var id: String
    /// Absolute path of the item (its real name, also when only a placeholder is on the disk).
    public var path: String
    public var isDirectory: Bool
    public var size: Int64
    public var creationDate: Date?
    public var modificationDate: Date?
    public var downloadingStatus: DownloadingStatus
    public var isDownloading: Bool
    public var isUploading: Bool
    public var isUploaded: Bool
    public var percentDownloaded: Double?
    public var percentUploaded: Double?
    public var downloadingError: String?
    public var uploadingError: String?
    public var hasUnresolvedConflicts: Bool

    package init(
        id: String, path: String, isDirectory: Bool, size: Int64, creationDate: Date?, modificationDate: Date?,
        downloadingStatus: DownloadingStatus, isDownloading: Bool = false, isUploading: Bool = false, isUploaded: Bool,
        percentDownloaded: Double? = nil, percentUploaded: Double? = nil, downloadingError: String? = nil,
        uploadingError: String? = nil, hasUnresolvedConflicts: Bool
    ) {
        self.id = id
        self.path = path
        self.isDirectory = isDirectory
        self.size = size
        self.creationDate = creationDate
        self.modificationDate = modificationDate
        self.downloadingStatus = downloadingStatus
        self.isDownloading = isDownloading
        self.isUploading = isUploading
        self.isUploaded = isUploaded
        self.percentDownloaded = percentDownloaded
        self.percentUploaded = percentUploaded
        self.downloadingError = downloadingError
        self.uploadingError = uploadingError
        self.hasUnresolvedConflicts = hasUnresolvedConflicts
    }

    public var url: URL { URL(fileURLWithPath: path, isDirectory: isDirectory) }

    /// The last component of the path (the file's name).
    public var name: String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.utf8.index(after: slash)...])
    }

    /// The name's extension, lowercased, without the dot ("" for none; a leading dot starts no extension).
    var fileExtension: String {
        let name = name
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...]).lowercased()
    }

    /// The attribute `key` names (`Key`), as predicates compare it.
    public func value(forAttribute key: String) -> MetadataValue? {
        switch key {
        case Key.fsName, Key.displayName: .string(name)
        case Key.path: .string(path)
        case Key.url: .string(url.absoluteString)
        case Key.fsSize: .number(Double(size))
        case Key.fsCreationDate: creationDate.map(MetadataValue.date)
        case Key.fsContentChangeDate: modificationDate.map(MetadataValue.date)
        case Key.fileExtension: .string(fileExtension)
        case Key.isDirectory: .number(isDirectory ? 1 : 0)
        case Key.downloadingStatus: .string(downloadingStatus.rawValue)
        case Key.isDownloading: .number(isDownloading ? 1 : 0)
        case Key.isUploading: .number(isUploading ? 1 : 0)
        case Key.isUploaded: .number(isUploaded ? 1 : 0)
        case Key.percentDownloaded: percentDownloaded.map(MetadataValue.number)
        case Key.percentUploaded: percentUploaded.map(MetadataValue.number)
        case Key.downloadingError: downloadingError.map(MetadataValue.string)
        case Key.uploadingError: uploadingError.map(MetadataValue.string)
        case Key.hasUnresolvedConflicts: .number(hasUnresolvedConflicts ? 1 : 0)
        default: nil
        }
    }
}

extension MetadataItem {
    /// Appends the item as one line of tab-separated fields (without the newline): a query's many items
    /// travel so, since encoding and decoding 100,000 of them as JSON objects took seconds.
    package func appendRow(to bytes: inout [UInt8]) {
        func text(_ value: String?) {
            if let value { bytes.append(contentsOf: Self.escape(value).utf8) }
            bytes.append(0x09)
        }
        func number(_ value: Double?) {
            if let value { Self.appendNumber(value, to: &bytes) }
            bytes.append(0x09)
        }
        func flag(_ value: Bool) { bytes.append(contentsOf: value ? [0x31, 0x09] : [0x30, 0x09]) }
        text(id)
        text(path)
        flag(isDirectory)
        bytes.append(contentsOf: String(size).utf8)
        bytes.append(0x09)
        number(creationDate?.timeIntervalSince1970)
        number(modificationDate?.timeIntervalSince1970)
        bytes.append(downloadingStatus == .notDownloaded ? 0x30 : downloadingStatus == .downloaded ? 0x31 : 0x32)
        bytes.append(0x09)
        flag(isDownloading)
        flag(isUploading)
        flag(isUploaded)
        number(percentDownloaded)
        number(percentUploaded)
        text(downloadingError)
        text(uploadingError)
        bytes.append(hasUnresolvedConflicts ? 0x31 : 0x30)
    }

    /// Appends `value` as text `Double(_:)` reads back exactly. Whole numbers (percentages) and whole
    /// milliseconds (the server's dates) are written as integers, without `description`'s search for the
    /// shortest digits, which was a good part of a row's cost: the text of `ms / 1000` names the same number
    /// as the division's result does, the one nearest to it.
    static func appendNumber(_ value: Double, to bytes: inout [UInt8]) {
        let milliseconds = (value * 1000).rounded()
        guard milliseconds >= 0, milliseconds < 9e15, milliseconds / 1000 == value else {
            bytes.append(contentsOf: value.description.utf8)
            return
        }
        let whole = Int64(milliseconds)
        bytes.append(contentsOf: String(whole / 1000).utf8)
        guard whole % 1000 != 0 else { return }
        let fraction = whole % 1000
        bytes.append(contentsOf: [
            0x2E, UInt8(0x30 + fraction / 100), UInt8(0x30 + fraction / 10 % 10), UInt8(0x30 + fraction % 10),
        ])
    }

    /// The item a row describes, nil for a malformed one. Read byte by byte, making strings only of the
    /// text fields: splitting by characters cost more than the rest of a 100,000-item query together.
    package init?(row bytes: ArraySlice<UInt8>) {
        var bounds: [Range<Int>] = []
        bounds.reserveCapacity(15)
        var start = bytes.startIndex
        for index in bytes.indices where bytes[index] == 0x09 {
            bounds.append(start..<index)
            start = index + 1
        }
        bounds.append(start..<bytes.endIndex)
        guard bounds.count == 15 else { return nil }
        func text(_ field: Int) -> String {
            let text = String(decoding: bytes[bounds[field]], as: UTF8.self)
            return bytes[bounds[field]].contains(0x5C) ? Self.unescape(text) : text
        }
        func optionalText(_ field: Int) -> String? { bounds[field].isEmpty ? nil : text(field) }
        func flag(_ field: Int) -> Bool { bounds[field].count == 1 && bytes[bounds[field].lowerBound] == 0x31 }
        func integer(_ field: Int) -> Int64? {
            guard !bounds[field].isEmpty, bounds[field].count <= 18 else { return nil }
            var value: Int64 = 0
            for byte in bytes[bounds[field]] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        func number(_ field: Int) -> Double? {
            bounds[field].isEmpty ? nil : Double(String(decoding: bytes[bounds[field]], as: UTF8.self))
        }
        let status = bounds[6].count == 1 ? bytes[bounds[6].lowerBound] : 0
        guard let size = integer(3), (0x30...0x32).contains(status) else { return nil }
        self.init(
            id: text(0), path: text(1), isDirectory: flag(2), size: size,
            creationDate: number(4).map(Date.init(timeIntervalSince1970:)),
            modificationDate: number(5).map(Date.init(timeIntervalSince1970:)),
            downloadingStatus: status == 0x30 ? .notDownloaded : status == 0x31 ? .downloaded : .current,
            isDownloading: flag(7), isUploading: flag(8), isUploaded: flag(9), percentDownloaded: number(10),
            percentUploaded: number(11), downloadingError: optionalText(12), uploadingError: optionalText(13),
            hasUnresolvedConflicts: flag(14))
    }

    private static func escape(_ text: String) -> String {
        var text = text
        // Over the bytes in place: through `utf8.contains(where:)` this check cost a quarter of a row.
        let special = text.withUTF8 { bytes in bytes.contains { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D } }
        guard special else { return text }
        return text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\t", with: "\\t")
            .replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
    }

    private static func unescape(_ field: String) -> String {
        var text = ""
        var escaped = false
        for character in field {
            if escaped {
                text.append(character == "t" ? "\t" : character == "n" ? "\n" : character == "r" ? "\r" : character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                text.append(character)
            }
        }
        return text
    }
}
