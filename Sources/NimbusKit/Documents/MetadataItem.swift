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
    public var name: String { (path as NSString).lastPathComponent }

    /// The attribute `key` names (`Key`), as predicates compare it.
    public func value(forAttribute key: String) -> MetadataValue? {
        switch key {
        case Key.fsName, Key.displayName: .string(name)
        case Key.path: .string(path)
        case Key.url: .string(url.absoluteString)
        case Key.fsSize: .number(Double(size))
        case Key.fsCreationDate: creationDate.map(MetadataValue.date)
        case Key.fsContentChangeDate: modificationDate.map(MetadataValue.date)
        case Key.fileExtension: .string((name as NSString).pathExtension.lowercased())
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
