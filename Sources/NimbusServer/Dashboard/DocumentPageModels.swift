/// The user's document containers, with the bytes each holds against the quota.
struct DocumentsPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var zones: [ZoneRow]
    var bytes: Int
    var quota: Int
    var bytesText: String
    var quotaText: String

    struct ZoneRow: Sendable {
        var container: String
        var environment: String
        var link: String
        var bytes: Int
    }

    init(chrome: DashboardChrome, zones: [ZoneRow], bytes: Int, quota: Int) {
        self.chrome = chrome
        self.zones = zones
        self.bytes = bytes
        self.quota = quota
        bytesText = DocumentPages.bytes(Int64(bytes))
        quotaText = DocumentPages.bytes(Int64(quota))
    }
}

/// One folder: its trail from the container down, its items, upload and new-folder forms.
struct FolderPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var place: String
    var trail: [Crumb]
    var rows: [Row]
    var isEmpty: Bool
    var folder: String
    var uploadAction: String
    var folderAction: String
    var trashLink: String
    var maxUpload: String

    struct Crumb: Sendable {
        var name: String
        var link: String
    }

    struct Row: Sendable {
        var name: String
        var isFolder: Bool
        var link: String
        var size: String
        var modified: String
        var device: String
        var conflicts: Int
    }
}

/// One document: its current version, unresolved conflicts, history, and what can be done with it.
struct DocumentPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var place: String
    var base: String
    var userQuery: String
    var itemID: String
    var name: String
    var isFile: Bool
    var isDeleted: Bool
    var current: VersionRow?
    var download: String
    var conflicts: [VersionRow]
    var hasConflicts: Bool
    var history: [VersionRow]
    var folders: [Option]
    var folderLink: String

    struct VersionRow: Sendable {
        var versionID: String
        var role: String
        var saved: String
        var device: String
        var size: String
        var contentHash: String
        var content: String
        var download: String
    }
}

struct TrashPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var place: String
    var rows: [Row]
    var isEmpty: Bool
    var folderLink: String

    struct Row: Sendable {
        var itemID: String
        var name: String
        var deleted: String
        var size: String
        var restoreAction: String
        var purgeAction: String
    }
}
