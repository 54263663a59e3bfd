import Crypto
import Foundation
import Hummingbird
import HummingbirdCore
import NimbusCore
import NimbusStore

/// A user's iCloud documents, as iCloud.com shows them: their containers as folders; download, upload,
/// rename, move, delete; versions with download and restore; unresolved conflicts; Recently Deleted.
/// Every change is a `DocumentService` batch made by the dashboard's session as the device, so devices
/// see it by push like any other device's change.
struct DocumentPages {
    let server: ServerState
    var documents: DocumentService { DocumentService(server: server) }
    /// A file uploaded through the browser is read whole before it is chunked: larger ones belong to a device.
    static let maxUploadBytes = 256 << 20
    /// What versions saved here say they came from, beside devices' own names.
    static let deviceName = "Web dashboard"

    func register(on router: RouterGroup<DashboardRequestContext>, viewer: @escaping DashboardViewerLoader) {
        router.get("documents") { request, context in
            let viewer = try await viewer(context)
            let user = try Self.user(request, viewer)
            return DashboardRenderer.shared.page("documents", try await containersPage(viewer, user: user))
        }
        let zone = router.group("documents/:container/:environment")
        zone.get("") { request, context in
            let (viewer, place) = try await open(request, context, viewer)
            return DashboardRenderer.shared.page(
                "folder", try await folderPage(viewer, place, folder: request.uri.queryParameters.get("folder"), request.uri))
        }
        zone.get("items/:item") { request, context in
            let (viewer, place) = try await open(request, context, viewer)
            return DashboardRenderer.shared.page(
                "document", try await itemPage(viewer, place, itemID: try context.parameters.require("item"), request.uri))
        }
        zone.get("items/:item/download") { request, context in
            let (_, place) = try await open(request, context, viewer)
            return try await download(
                place, itemID: try context.parameters.require("item"), versionID: request.uri.queryParameters.get("version"))
        }
        zone.get("trash") { request, context in
            let (viewer, place) = try await open(request, context, viewer)
            return DashboardRenderer.shared.page("trash", try await trashPage(viewer, place, request.uri))
        }
        zone.post("upload") { request, context in
            let (viewer, place) = try await open(request, context, viewer)
            let folder = request.uri.queryParameters.get("folder").flatMap { $0.isEmpty ? nil : String($0) }
            return try await DashboardSubmission.run(request, done: place.folderPath(folder, notice: .documentUploaded)) {
                try await upload(place, request: request, folder: folder, deviceID: viewer.session.deviceID)
            } failed: { error, status in
                var model = try await folderPage(viewer, place, folder: folder, request.uri)
                model.chrome.error = error
                return DashboardRenderer.shared.page("folder", model, status: status)
            }
        }
        zone.post("folders") { request, context in
            let (viewer, place) = try await open(request, context, viewer)
            let form = try await DashboardForm.read(request)
            let parent = form.trimmed("parent")
            return try await apply(
                request, viewer, place, done: place.folderPath(parent, notice: .folderCreated), back: .folder(parent)
            ) {
                [
                    DocumentOperation(
                        .save, itemID: UUIDString.random(), parentID: parent, name: form.trimmed("name") ?? "", kind: .folder)
                ]
            }
        }
        zone.post("items/:item/:action") { request, context in
            let (viewer, place) = try await open(request, context, viewer)
            let form = try await DashboardForm.read(request)
            let itemID = try context.parameters.require("item")
            let action = try context.parameters.require("action")
            let item = try await self.item(place, itemID)
            let (notice, back) = try Self.outcome(of: action, item)
            let history =
                action == "restore-version"
                ? try await documents.versions(place.zone, DocumentVersionsRequest(itemID: itemID)).history : []
            return try await apply(
                request, viewer, place,
                done: back == .trash ? place.trashPath(notice: notice) : place.itemPath(itemID, notice: notice),
                back: back
            ) {
                try Self.operations(action, item: item, form: form, history: history)
            }
        }
    }

    /// What an action on an item says when it succeeds, and where the person goes back to.
    private static func outcome(of action: String, _ item: DocumentItem) throws -> (DashboardNotice, Back) {
        switch action {
        case "rename": (.documentRenamed, .item(item.itemID))
        case "move": (.documentMoved, .item(item.itemID))
        case "delete": (.documentDeleted, .trash)
        case "restore-version": (.versionRestored, .item(item.itemID))
        case "keep-current", "keep-version", "keep-both": (.conflictResolved, .item(item.itemID))
        case "restore": (.documentRestored, .item(item.itemID))
        case "purge": (.documentPurged, .trash)
        default: throw NimbusError.notFound("no such page")
        }
    }

    /// The batch an action makes; what it names is checked by `DocumentService` as any device's batch is.
    private static func operations(_ action: String, item: DocumentItem, form: DashboardForm, history: [DocumentVersion]) throws
        -> [DocumentOperation]
    {
        let current = item.current?.content.contentHash
        func version(_ id: String?) throws -> DocumentVersion {
            guard let id, let version = item.conflicts.first(where: { $0.versionID == id }) else {
                throw NimbusError.notFound("the item has no conflict version \(id ?? "")")
            }
            return version
        }
        switch action {
        case "rename":
            return [DocumentOperation(.move, itemID: item.itemID, parentID: item.parentID, name: form.trimmed("name") ?? "")]
        case "move":
            let parent = form.trimmed("parent")
            return [DocumentOperation(.move, itemID: item.itemID, parentID: parent == "" ? nil : parent, name: item.name)]
        case "delete":
            return [DocumentOperation(.delete, itemID: item.itemID, baseContentHash: current)]
        case "restore-version":
            // Restoring an older version saves its content as the newest, as iCloud.com's "restore" does.
            guard let earlier = history.first(where: { $0.versionID == form.value("version") }) else {
                throw NimbusError.notFound("the document has no earlier version \(form.value("version") ?? "")")
            }
            return [
                DocumentOperation(
                    .save, itemID: item.itemID, parentID: item.parentID, name: item.name, kind: item.kind,
                    baseContentHash: current,
                    content: earlier.content)
            ]
        case "keep-current":
            return [DocumentOperation(.resolve, itemID: item.itemID, versionIDs: item.conflicts.map(\.versionID))]
        case "keep-version":
            let kept = try version(form.value("version"))
            return [
                DocumentOperation(
                    .save, itemID: item.itemID, parentID: item.parentID, name: item.name, kind: item.kind,
                    baseContentHash: current,
                    content: kept.content),
                DocumentOperation(.resolve, itemID: item.itemID, versionIDs: item.conflicts.map(\.versionID)),
            ]
        case "keep-both":
            let kept = try version(form.value("version"))
            return [
                DocumentOperation(
                    .save, itemID: UUIDString.random(), parentID: item.parentID, name: copyName(item.name, device: kept.device),
                    kind: item.kind, content: kept.content),
                DocumentOperation(.resolve, itemID: item.itemID, versionIDs: [kept.versionID]),
            ]
        case "restore": return [DocumentOperation(.restore, itemID: item.itemID)]
        case "purge": return [DocumentOperation(.purge, itemID: item.itemID)]
        default: throw NimbusError.notFound("no such page")
        }
    }

    /// "Report (Ann's iPad).txt" for a conflict version kept beside the original.
    static func copyName(_ name: String, device: String) -> String {
        let url = URL(fileURLWithPath: name)
        let base = url.deletingPathExtension().lastPathComponent
        let suffix = url.pathExtension.isEmpty ? "" : "." + url.pathExtension
        return "\(base) (\(device.prefix(60)))\(suffix)"
    }

    enum Back: Equatable {
        case folder(String?)
        case item(String)
        case trash
    }

    private func apply(
        _ request: Request, _ viewer: DashboardViewer, _ place: DocumentPlace, done: String, back: Back,
        _ operations: @escaping () throws -> [DocumentOperation]
    ) async throws -> Response {
        try await DashboardSubmission.run(request, done: done) {
            let response = try await documents.modify(
                place.zone, DocumentModifyRequest(operations: try operations(), device: Self.deviceName),
                deviceID: viewer.session.deviceID)
            if let failed = response.results.first(where: { $0.outcome == .failed || $0.outcome == .conflict }) {
                throw NimbusError(
                    failed.serverErrorCode ?? .conflict,
                    failed.reason ?? "the document changed on another device meanwhile; reload and try again")
            }
        } failed: { error, status in
            switch back {
            case .folder(let folder):
                var model = try await folderPage(viewer, place, folder: folder, request.uri)
                model.chrome.error = error
                return DashboardRenderer.shared.page("folder", model, status: status)
            case .item(let itemID):
                var model = try await itemPage(viewer, place, itemID: itemID, request.uri)
                model.chrome.error = error
                return DashboardRenderer.shared.page("document", model, status: status)
            case .trash:
                var model = try await trashPage(viewer, place, request.uri)
                model.chrome.error = error
                return DashboardRenderer.shared.page("trash", model, status: status)
            }
        }
    }

    private static func user(_ request: Request, _ viewer: DashboardViewer) throws -> String {
        let user = request.uri.queryParameters.get("user") ?? viewer.account.id
        try viewer.requireAccess(toUser: user)
        return user
    }

    private func open(_ request: Request, _ context: DashboardRequestContext, _ viewer: DashboardViewerLoader) async throws
        -> (DashboardViewer, DocumentPlace)
    {
        let viewer = try await viewer(context)
        let user = try Self.user(request, viewer)
        let container = try context.parameters.require("container")
        let environment = try context.parameters.require("environment")
        guard try await server.store.container(identifier: container) != nil, ["development", "production"].contains(environment)
        else { throw NimbusError.notFound("no such page") }
        return (viewer, DocumentPlace(user: user, container: container, environment: environment))
    }

    private func item(_ place: DocumentPlace, _ itemID: String) async throws -> DocumentItem {
        try DocumentKeys.validateItemID(itemID)
        guard let payload = try await server.store.entries(place.zone, keys: [DocumentKeys.item(itemID)]).first?.payload else {
            throw NimbusError.notFound("no such document")
        }
        return try JSONDecoder().decode(DocumentItem.self, from: payload)
    }

    private func children(_ place: DocumentPlace, of folder: String?) async throws -> [DocumentItem] {
        let matches = try await server.store.query(
            IndexQuery(
                zones: [place.zone], kind: DocumentKeys.itemKind,
                conditions: [IndexCondition(field: "parent", .equal(.text(folder ?? "")))], limit: DocumentNames.maxEntries))
        let decoder = JSONDecoder()
        return try matches.compactMap { try $0.entry.payload.map { try decoder.decode(DocumentItem.self, from: $0) } }
            .sorted { ($0.kind == .folder ? 0 : 1, $0.name.lowercased()) < ($1.kind == .folder ? 0 : 1, $1.name.lowercased()) }
    }

    /// The folders from the top down to `folder`.
    private func path(_ place: DocumentPlace, to folder: String?) async throws -> [DocumentItem] {
        var path = [DocumentItem]()
        var next = folder
        while let id = next, path.count < 64 {
            let item = try await item(place, id)
            path.insert(item, at: 0)
            next = item.parentID
        }
        return path
    }

    private func containersPage(_ viewer: DashboardViewer, user: String) async throws -> DocumentsPageModel {
        guard let account = try await server.store.account(id: user) else { throw NimbusError.notFound("no such page") }
        var rows = [DocumentsPageModel.ZoneRow]()
        var documentBytes = 0
        for container in try await server.store.containers() {
            for environment in ["production", "development"] {
                let place = DocumentPlace(user: user, container: container.identifier, environment: environment)
                guard let state = try await server.store.zoneState(place.zone) else { continue }
                documentBytes += state.liveBytes
                rows.append(
                    DocumentsPageModel.ZoneRow(
                        container: container.identifier, environment: environment, link: place.folderPath(nil, notice: nil),
                        bytes: state.liveBytes))
            }
        }
        return DocumentsPageModel(
            chrome: DashboardChrome(title: "Documents of \(account.email)", viewer: viewer, section: "documents"),
            zones: rows, bytes: documentBytes, quota: Int(server.configuration.userQuotaBytes))
    }

    private func folderPage(_ viewer: DashboardViewer, _ place: DocumentPlace, folder: String?, _ uri: URI) async throws
        -> FolderPageModel
    {
        let folder = folder.flatMap { $0.isEmpty ? nil : $0 }
        let path = try await path(place, to: folder)
        let items = try await children(place, of: folder).map { item in
            FolderPageModel.Row(
                name: item.name, isFolder: item.kind == .folder,
                link: item.kind == .folder
                    ? place.folderPath(item.itemID, notice: nil) : place.itemPath(item.itemID, notice: nil),
                size: item.current.map { Self.bytes($0.content.size) } ?? "",
                modified: item.current.map { Self.time($0.savedAt) } ?? "", device: item.current?.device ?? "",
                conflicts: item.conflicts.count)
        }
        return FolderPageModel(
            chrome: DashboardChrome(
                title: path.last?.name ?? place.container, viewer: viewer, section: "documents",
                notice: DashboardNotice.message(in: uri)),
            place: place.caption,
            trail: [FolderPageModel.Crumb(name: place.container, link: place.folderPath(nil, notice: nil))]
                + path.map { FolderPageModel.Crumb(name: $0.name, link: place.folderPath($0.itemID, notice: nil)) },
            rows: items, isEmpty: items.isEmpty, folder: folder ?? "",
            uploadAction: place.base + "/upload"
                + DashboardLinks.query(place.userQuery + [("folder", folder ?? ""), ("csrf", viewer.csrfToken)]),
            folderAction: place.base + "/folders" + DashboardLinks.query(place.userQuery),
            trashLink: place.trashPath(notice: nil), maxUpload: Self.bytes(Int64(Self.maxUploadBytes)))
    }

    private func itemPage(_ viewer: DashboardViewer, _ place: DocumentPlace, itemID: String, _ uri: URI) async throws
        -> DocumentPageModel
    {
        let item = try await item(place, itemID)
        let history =
            item.deletedAt == nil && item.kind != .folder
            ? try await documents.versions(place.zone, DocumentVersionsRequest(itemID: itemID)).history : []
        let siblings = try await children(place, of: item.parentID).filter { $0.kind == .folder && $0.itemID != item.itemID }
        let parent = try await path(place, to: item.parentID)
        let encoder = JSONEncoder()
        let version = { (version: DocumentVersion, role: String) in
            DocumentPageModel.VersionRow(
                versionID: version.versionID, role: role, saved: Self.time(version.savedAt), device: version.device,
                size: Self.bytes(version.content.size), contentHash: version.content.contentHash,
                content: String(decoding: (try? encoder.encode(version.content)) ?? Data(), as: UTF8.self),
                download: place.itemPath(itemID, notice: nil, extra: [("version", version.versionID)], download: true))
        }
        var folders = [Option(value: "", label: "Top of \(place.container)", selected: item.parentID == nil)]
        if let grandparent = parent.dropLast().last {
            folders.append(Option(value: grandparent.itemID, label: "↑ \(grandparent.name)", selected: false))
        } else if item.parentID != nil {
            folders[0].label = "↑ Top of \(place.container)"
        }
        folders += siblings.map { Option(value: $0.itemID, label: $0.name, selected: false) }
        return DocumentPageModel(
            chrome: DashboardChrome(
                title: item.name, viewer: viewer, section: "documents", notice: DashboardNotice.message(in: uri)),
            place: place.caption, base: place.base, userQuery: DashboardLinks.query(place.userQuery), itemID: itemID,
            name: item.name, isFile: item.kind != .folder, isDeleted: item.deletedAt != nil,
            current: item.current.map { version($0, "current") },
            download: place.itemPath(itemID, notice: nil, download: true),
            conflicts: item.conflicts.map { version($0, "conflict") }, hasConflicts: !item.conflicts.isEmpty,
            history: history.map { version($0, "earlier") }, folders: folders,
            folderLink: place.folderPath(item.parentID, notice: nil))
    }

    private func trashPage(_ viewer: DashboardViewer, _ place: DocumentPlace, _ uri: URI) async throws -> TrashPageModel {
        let items = try await documents.trash(place.zone).items.map { item in
            TrashPageModel.Row(
                itemID: item.itemID, name: item.name, deleted: item.deletedAt.map(Self.time) ?? "",
                size: item.current.map { Self.bytes($0.content.size) } ?? "",
                restoreAction: place.base + "/items/\(DashboardLinks.encoded(item.itemID))/restore"
                    + DashboardLinks.query(place.userQuery),
                purgeAction: place.base + "/items/\(DashboardLinks.encoded(item.itemID))/purge"
                    + DashboardLinks.query(place.userQuery))
        }
        return TrashPageModel(
            chrome: DashboardChrome(
                title: "Recently Deleted", viewer: viewer, section: "documents", notice: DashboardNotice.message(in: uri)),
            place: place.caption, rows: items, isEmpty: items.isEmpty, folderLink: place.folderPath(nil, notice: nil))
    }

    /// Reads the uploaded file, stores its chunks (held by the user, as a device's upload is) and saves
    /// it as a new document, or a new version of the file of the same name in the folder.
    private func upload(_ place: DocumentPlace, request: Request, folder: String?, deviceID: String) async throws {
        let (file, filename) = try await MultipartFile.collect(
            request.body, contentType: request.headers[.contentType], limit: Self.maxUploadBytes,
            tooLarge: NimbusError(
                .requestTooLarge, "the dashboard uploads files of at most \(Self.bytes(Int64(Self.maxUploadBytes))); use a device"
            ))
        guard let name = filename.map({ $0.trimmingCharacters(in: .whitespaces) }), !name.isEmpty else {
            throw NimbusError.badRequest("choose a file to upload")
        }
        let (chunks, content) = try await BlockingWork.run { Self.chunked(file) }
        try await server.blobs.storeChunks(chunks)
        try await ChunkTransfers(server: server).hold(
            place.zone, Dictionary(chunks.map { ($0.hash, Int64($0.bytes.count)) }, uniquingKeysWith: { a, _ in a }))
        let existing = try await children(place, of: folder).first {
            DocumentNames.collisionKey($0.name) == DocumentNames.collisionKey(name) && $0.kind == .file
        }
        let response = try await documents.modify(
            place.zone,
            DocumentModifyRequest(
                operations: [
                    DocumentOperation(
                        .save, itemID: existing?.itemID ?? UUIDString.random(), parentID: folder, name: name, kind: .file,
                        baseContentHash: existing?.current?.content.contentHash, content: content)
                ], device: Self.deviceName), deviceID: deviceID)
        if let failed = response.results.first(where: { $0.outcome == .failed }) {
            throw NimbusError(failed.serverErrorCode ?? .badRequest, failed.reason ?? "the upload was refused")
        }
    }

    private static func chunked(_ bytes: Data) -> ([ChunkBundle.Chunk], DocumentContent) {
        var chunks = [ChunkBundle.Chunk]()
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            for length in ContentDefinedChunker.standard.chunkLengths(of: buffer) {
                let slice = bytes.subdata(in: offset..<offset + length)
                chunks.append(ChunkBundle.Chunk(hashing: slice))
                offset += length
            }
        }
        let content = DocumentContent(
            contentHash: Secrets.hex(SHA256.hash(data: bytes)), size: Int64(bytes.count),
            chunks: chunks.map { DocumentChunk(hash: $0.hash, size: Int64($0.bytes.count)) },
            modifiedAt: Date().milliseconds)
        return (chunks, content)
    }

    /// A version's bytes, chunk after chunk, as a download.
    private func download(_ place: DocumentPlace, itemID: String, versionID: String?) async throws -> Response {
        let item = try await item(place, itemID)
        var version = item.current
        if let versionID, versionID != item.current?.versionID {
            version = item.conflicts.first { $0.versionID == versionID }
            if version == nil {
                version = try await documents.versions(place.zone, DocumentVersionsRequest(itemID: itemID)).history.first {
                    $0.versionID == versionID
                }
            }
        }
        guard let version else { throw NimbusError.notFound("the document has no such version") }
        let hashes = version.content.chunks.map(\.hash)
        let stored = try await server.blobs.sizes(Array(Set(hashes)))
        guard hashes.allSatisfy({ stored[$0] != nil }) else {
            throw NimbusError.notFound("a chunk of this version is no longer stored")
        }
        var headers = DashboardRenderer.securityHeaders
        headers[.contentType] = "application/octet-stream"
        headers[.contentDisposition] = "attachment; filename*=UTF-8''" + DashboardLinks.encoded(item.name)
        headers[.cacheControl] = "no-store"
        let blobs = server.blobs
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(contentLength: Int(version.content.size)) { writer in
                for hash in hashes {
                    try await blobs.read(hash, range: nil) { piece in try await writer.write(piece) }
                }
                try await writer.finish(nil)
            })
    }

    static func bytes(_ count: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: count, countStyle: .file)
    }

    static func time(_ milliseconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(milliseconds: milliseconds))
    }
}

/// One user's documents in one container environment, and the dashboard's links into it.
struct DocumentPlace: Sendable {
    var user: String
    var container: String
    var environment: String

    var zone: ZoneKey {
        ZoneKey(
            accountID: user,
            address: ZoneAddress(
                service: .documents(container: container, environment: environment), name: DocumentService.zoneName))
    }

    var caption: String { "\(container) · \(environment)" }
    var base: String { "/dashboard/documents/\(DashboardLinks.encoded(container))/\(environment)" }
    var userQuery: [(String, String?)] { [("user", user)] }

    func folderPath(_ folder: String?, notice: DashboardNotice?) -> String {
        base + DashboardLinks.query(userQuery + [("folder", folder), ("notice", notice?.rawValue)])
    }

    func itemPath(_ itemID: String, notice: DashboardNotice?, extra: [(String, String?)] = [], download: Bool = false) -> String {
        base + "/items/" + DashboardLinks.encoded(itemID) + (download ? "/download" : "")
            + DashboardLinks.query(userQuery + extra + [("notice", notice?.rawValue)])
    }

    func trashPath(notice: DashboardNotice?) -> String {
        base + "/trash" + DashboardLinks.query(userQuery + [("notice", notice?.rawValue)])
    }
}
