import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// A container's records: query a type in a database and zone with the API's comparators and sort,
/// choose the columns, view, create, edit and delete a record. Every read and write goes through
/// `RecordService`, so it is checked and refused as the API would.
struct RecordPages {
    let server: ServerState
    var records: RecordService { RecordService(server: server) }
    static let pageSize = 50

    func register(on router: RouterGroup<DashboardRequestContext>, viewer: @escaping DashboardViewerLoader) {
        let group = router.group("containers/:container/records")
        RecordTransfers(pages: self).register(on: group, viewer: viewer)
        group.get("") { request, context in
            let (viewer, scope) = try await open(
                request, context, viewer, fields: DashboardForm(encoded: request.uri.query ?? ""))
            return DashboardRenderer.shared.page(
                "records", try await queryPage(viewer, scope, DashboardForm(encoded: request.uri.query ?? ""), request))
        }
        group.get("new") { request, context in
            let query = DashboardForm(encoded: request.uri.query ?? "")
            let (viewer, scope) = try await open(request, context, viewer, fields: query)
            let type = query.trimmed("type") ?? ""
            return DashboardRenderer.shared.page(
                "record", try await recordPage(viewer, scope, request, record: RecordWire(recordType: type), isNew: true))
        }
        group.post("") { request, context in
            let form = try await DashboardForm.read(request)
            let (viewer, scope) = try await open(request, context, viewer, fields: form)
            let type = form.trimmed("type") ?? ""
            var saved: RecordWire?
            return try await DashboardSubmission.run(request, done: "") {
                saved = try await save(
                    viewer, scope, request, form: form, name: form.trimmed("recordName"), type: type, changeTag: nil)
            } failed: { error, status in
                var model = try await recordPage(viewer, scope, request, record: RecordWire(recordType: type), isNew: true)
                model.chrome.error = error
                model.refill(form)
                return DashboardRenderer.shared.page("record", model, status: status)
            }.redirectedTo(
                saved.map { scope.recordPath($0.recordName ?? "") + "&notice=" + DashboardNotice.recordSaved.rawValue })
        }
        group.get(":record") { request, context in
            let (viewer, scope) = try await open(
                request, context, viewer, fields: DashboardForm(encoded: request.uri.query ?? ""))
            let record = try await lookup(viewer, scope, request, name: try context.parameters.require("record"))
            var model = try await recordPage(viewer, scope, request, record: record, isNew: false)
            model.chrome.notice = DashboardNotice.message(in: request.uri)
            return DashboardRenderer.shared.page("record", model)
        }
        group.post(":record") { request, context in
            let form = try await DashboardForm.read(request)
            let (viewer, scope) = try await open(request, context, viewer, fields: form)
            let name = try context.parameters.require("record")
            return try await DashboardSubmission.run(
                request, done: scope.recordPath(name) + "&notice=" + DashboardNotice.recordSaved.rawValue
            ) {
                _ = try await save(
                    viewer, scope, request, form: form, name: name, type: form.trimmed("type") ?? "",
                    changeTag: form.trimmed("changeTag"))
            } failed: { error, status in
                let record = try await lookup(viewer, scope, request, name: name)
                var model = try await recordPage(viewer, scope, request, record: record, isNew: false)
                model.chrome.error = error
                model.refill(form)
                return DashboardRenderer.shared.page("record", model, status: status)
            }
        }
        group.post(":record/files/:field") { request, context in
            // A file upload: the form's fields ride in the query, the body is the file (streamed to the blob store).
            let query = DashboardForm(encoded: request.uri.query ?? "")
            let (viewer, scope) = try await open(request, context, viewer, fields: query)
            let name = try context.parameters.require("record")
            return try await DashboardSubmission.run(
                request, done: scope.recordPath(name) + "&notice=" + DashboardNotice.fileUploaded.rawValue
            ) {
                try await uploadFile(
                    viewer, scope, request, record: name, field: try context.parameters.require("field"),
                    type: query.trimmed("type") ?? "", changeTag: query.trimmed("changeTag"))
            } failed: { error, status in
                let record = try await lookup(viewer, scope, request, name: name)
                var model = try await recordPage(viewer, scope, request, record: record, isNew: false)
                model.chrome.error = error
                return DashboardRenderer.shared.page("record", model, status: status)
            }
        }
        group.post(":record/delete") { request, context in
            let form = try await DashboardForm.read(request)
            let (viewer, scope) = try await open(request, context, viewer, fields: form)
            let name = try context.parameters.require("record")
            let done =
                scope.recordsPath + DashboardLinks.query(scope.queryItems + [("type", form.trimmed("type"))]) + "&notice="
                + DashboardNotice.recordDeleted.rawValue
            return try await DashboardSubmission.run(request, done: done) {
                let database = try await scope.database(viewer, server: server, baseURL: baseURL(request))
                var record = RecordWire(recordName: name, recordChangeTag: form.trimmed("changeTag"))
                record.recordType = form.trimmed("type")
                _ = try Self.single(
                    try await records.modify(
                        database, RecordsModifyRequest(operations: [RecordOperation(.delete, record)], zoneID: scope.zoneID)))
            } failed: { error, status in
                let record = try await lookup(viewer, scope, request, name: name)
                var model = try await recordPage(viewer, scope, request, record: record, isNew: false)
                model.chrome.error = error
                return DashboardRenderer.shared.page("record", model, status: status)
            }
        }
    }

    func open(
        _ request: Request, _ context: DashboardRequestContext, _ viewer: DashboardViewerLoader, fields: DashboardForm
    ) async throws -> (DashboardViewer, RecordScope) {
        let viewer = try await viewer(context)
        let container = try await viewer.developedContainer(try context.parameters.require("container"), in: server.store)
        return (viewer, try RecordScope(container: container.identifier, fields, viewer: viewer))
    }

    func baseURL(_ request: Request) -> String {
        PublicURL.base(for: request, configured: server.configuration.publicURL, tls: server.configuration.tls != nil)
    }

    /// The one record a modify or lookup answered, or the error it answered for it.
    private static func single(_ body: JSONBody) throws -> RecordWire {
        let response = try JSONDecoder().decode(RecordsResponse.self, from: Data(body.bytes))
        switch response.records.first {
        case .record(let record): return record
        case .failure(let failure): throw NimbusError(failure.serverErrorCode, failure.reason)
        case nil: throw NimbusError.notFound("the record does not exist")
        }
    }

    private func lookup(_ viewer: DashboardViewer, _ scope: RecordScope, _ request: Request, name: String) async throws
        -> RecordWire
    {
        let database = try await scope.database(viewer, server: server, baseURL: baseURL(request))
        var lookup = RecordsLookupRequest(records: [RecordsLookupRequest.Item(recordName: name)])
        lookup.zoneID = scope.zoneID
        return try Self.single(try await records.lookup(database, lookup))
    }

    /// Creates (`changeTag` nil) or updates a record from the form's fields, typed by the schema.
    private func save(
        _ viewer: DashboardViewer, _ scope: RecordScope, _ request: Request, form: DashboardForm, name: String?, type: String,
        changeTag: String?
    ) async throws -> RecordWire {
        let database = try await scope.database(viewer, server: server, baseURL: baseURL(request))
        let schema = try await server.schemas.schema(database)
        guard let recordType = schema.recordTypes.first(where: { $0.name == type }) else {
            throw NimbusError.badRequest("record type \(type) is not in the \(scope.environment.rawValue) schema")
        }
        var fields = [String: FieldValue]()
        var cleared = Set<String>()
        for field in recordType.fields where Schema.systemFieldTypes[field.name] == nil && field.type != "ASSET" {
            guard let text = form.value("field." + field.name) else { continue }
            // An empty box clears the field; so does a blank one, except for text, where spaces are a value.
            let blank = text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
            if text.isEmpty || (blank && field.type != "STRING") {
                cleared.insert(field.name)
            } else {
                fields[field.name] = try RecordFieldText.parse(text, type: field.type, isList: field.isList, field: field.name)
            }
        }
        var record = RecordWire(recordName: name, recordType: type, recordChangeTag: changeTag, fields: fields)
        let operation: RecordOperation.OperationType = changeTag == nil ? .create : .update
        if operation == .update { record.clearedFields = cleared }
        return try Self.single(
            try await records.modify(
                database, RecordsModifyRequest(operations: [RecordOperation(operation, record)], zoneID: scope.zoneID)))
    }

    /// Stores the request's file as a new value of a record's ASSET field, as a client would: an upload URL
    /// from `assets/upload` (which checks the viewer may save such records), the file to it, then the
    /// record updated with the receipt under its change tag (a stale one is refused).
    private func uploadFile(
        _ viewer: DashboardViewer, _ scope: RecordScope, _ request: Request, record: String, field: String, type: String,
        changeTag: String?
    ) async throws {
        let database = try await scope.database(viewer, server: server, baseURL: baseURL(request))
        let schema = try await server.schemas.schema(database)
        guard let declared = schema.recordTypes.first(where: { $0.name == type })?.fields.first(where: { $0.name == field }),
            declared.type == "ASSET", !declared.isList
        else {
            throw NimbusError.badRequest("\(type) has no file (ASSET) field \(field) to upload into")
        }
        let upload = try await records.requestUploads(
            database,
            AssetUploadRequest(tokens: [.init(recordName: record, recordType: type, fieldName: field)], zoneID: scope.zoneID))
        guard let id = upload.tokens.first?.url.split(separator: "/").last else {
            throw NimbusError(.internalError, "assets/upload answered without an upload URL")
        }
        let file = try await AssetTransfers(server: server).upload(
            id: String(id), body: request.body, contentType: request.headers[.contentType])
        let saved = RecordWire(
            recordName: record, recordType: type, recordChangeTag: changeTag, fields: [field: .asset(file.singleFile)])
        _ = try Self.single(
            try await records.modify(
                database, RecordsModifyRequest(operations: [RecordOperation(.update, saved)], zoneID: scope.zoneID)))
    }

    func queryPage(_ viewer: DashboardViewer, _ scope: RecordScope, _ query: DashboardForm, _ request: Request)
        async throws
        -> RecordsPageModel
    {
        let database = try await scope.database(viewer, server: server, baseURL: baseURL(request))
        let schema = try await server.schemas.schema(database)
        var model = RecordsPageModel(
            viewer, scope, schema: schema, query: query, notice: DashboardNotice.message(in: request.uri))
        model.users =
            try await viewer.isAdministrator
            ? server.store.accounts().map { Option(value: $0.id, label: $0.email, selected: $0.id == scope.user) }
            : [Option(value: viewer.account.id, label: viewer.account.email, selected: true)]
        guard let recordType = schema.recordTypes.first(where: { $0.name == model.type }) else { return model }
        let request = try Self.queryRequest(recordType, scope, query, limit: Self.pageSize)
        let body = try await records.query(database, request)
        let answer = try JSONDecoder().decode(RecordsQueryResponse.self, from: Data(body.bytes))
        model.show(answer, scope: scope, query: query)
        return model
    }

    /// The query a records page (or its export) asks `RecordService`: the type, the form's filters (each
    /// a `field`, `cmp` and `value`, all of which must hold) and sort, one page from the form's continuation
    /// marker.
    static func queryRequest(_ recordType: Schema.RecordType, _ scope: RecordScope, _ query: DashboardForm, limit: Int) throws
        -> RecordsQueryRequest
    {
        var filters = [QueryFilter]()
        for filter in RecordsPageModel.filters(query) {
            guard let comparator = QueryFilter.Comparator(rawValue: filter.comparator) else {
                throw NimbusError.badRequest("unknown comparator \(filter.comparator)")
            }
            guard let declared = recordType.fields.first(where: { $0.name == filter.field }) else {
                throw NimbusError.badRequest("record type \(recordType.name) has no field \(filter.field)")
            }
            let listComparators: Set<QueryFilter.Comparator> = [
                .in, .notIn, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll,
            ]
            let value = try RecordFieldText.parse(
                listComparators.contains(comparator) ? filter.value.replacingOccurrences(of: ",", with: "\n") : filter.value,
                type: declared.type, isList: listComparators.contains(comparator), field: filter.field)
            filters.append(QueryFilter(fieldName: filter.field, comparator: comparator, fieldValue: value))
        }
        var sorts = [QuerySort]()
        if let sort = query.trimmed("sort") {
            sorts.append(QuerySort(fieldName: sort, ascending: query.value("order") != "descending"))
        }
        var request = RecordsQueryRequest(
            query: RecordQuery(recordType: recordType.name, filterBy: filters, sortBy: sorts), zoneID: scope.zoneID,
            resultsLimit: limit, continuationMarker: query.trimmed("marker"))
        request.numbersAsStrings = false
        return request
    }

    private func recordPage(
        _ viewer: DashboardViewer, _ scope: RecordScope, _ request: Request, record: RecordWire, isNew: Bool
    ) async throws -> RecordPageModel {
        let database = try await scope.database(viewer, server: server, baseURL: baseURL(request))
        let schema = try await server.schemas.schema(database)
        guard let type = schema.recordTypes.first(where: { $0.name == record.recordType }) else {
            throw NimbusError.badRequest(
                "record type \(record.recordType ?? "") is not in the \(scope.environment.rawValue) schema")
        }
        var model = RecordPageModel(viewer, scope, type: type, record: record, isNew: isNew)
        var names = StampNames(server: server)
        if let created = record.created { model.created = try await names.stamp(created) }
        if let modified = record.modified { model.modified = try await names.stamp(modified) }
        if !isNew, let name = record.recordName {
            // The record was just read through the API as this viewer, so they may see it, and its history.
            for note in try await server.store.recordHistory(database.zone(scope.zone), key: name) {
                guard let version = RecordVersion(note: note) else { continue }
                model.history.append(
                    RecordPageModel.VersionRow(
                        changeTag: StoredRecord.changeTag(note.sequence),
                        isCurrent: StoredRecord.changeTag(note.sequence) == record.recordChangeTag,
                        stamp: try await names.stamp(version.stamp), change: RecordPageModel.VersionRow.words(version)))
            }
        }
        return model
    }
}

/// Who and which device, by email and device name where they still exist; each looked up once a page.
private struct StampNames {
    let server: ServerState
    private var users = [String: String]()
    private var devices = [String: String]()

    init(server: ServerState) { self.server = server }

    mutating func stamp(_ stamp: RecordWire.Stamp) async throws -> RecordPageModel.StampModel {
        if users[stamp.userRecordName] == nil {
            users[stamp.userRecordName] = try await server.store.account(id: stamp.userRecordName)?.email ?? stamp.userRecordName
        }
        if devices[stamp.deviceID] == nil {
            devices[stamp.deviceID] = try await server.store.device(id: stamp.deviceID)?.name ?? stamp.deviceID
        }
        return RecordPageModel.StampModel(
            time: ISO8601DateFormatter().string(from: Date(milliseconds: stamp.timestamp)),
            user: users[stamp.userRecordName]!, device: devices[stamp.deviceID]!, deviceID: stamp.deviceID)
    }
}

extension Response {
    /// This response, or a redirect to `location` when there is one (after a create, to the new record).
    func redirectedTo(_ location: String?) -> Response {
        guard let location, status == .seeOther else { return self }
        return DashboardRenderer.redirect(to: location)
    }
}

struct Option: Sendable {
    var value: String
    var label: String
    var selected: Bool
}
