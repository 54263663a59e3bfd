import Foundation
import Hummingbird
import NimbusCore

/// A records page's query exported as JSON (the API's records) or CSV (one column a field, values as
/// the dashboard writes them), and records imported from either: each saved as given (`forceReplace`),
/// 200 to a batch, through `RecordService` like any save.
struct RecordTransfers {
    let pages: RecordPages
    var server: ServerState { pages.server }
    /// Records a query asks for at a time while exporting.
    static let exportPage = 200
    static let maxImportBytes = 64 << 20

    func register(on group: RouterGroup<DashboardRequestContext>, viewer: @escaping DashboardViewerLoader) {
        group.get("export/:format") { request, context in
            let query = DashboardForm(encoded: request.uri.query ?? "")
            let (viewer, scope) = try await pages.open(request, context, viewer, fields: query)
            let format = try context.parameters.require("format")
            guard format == "json" || format == "csv" else { throw NimbusError.notFound("no such page") }
            let database = try await scope.database(viewer, server: server, baseURL: pages.baseURL(request))
            let schema = try await server.schemas.schema(database)
            guard let recordType = schema.recordTypes.first(where: { $0.name == query.trimmed("type") }) else {
                throw NimbusError.badRequest("choose a record type to export")
            }
            var firstPage = try RecordPages.queryRequest(recordType, scope, query, limit: Self.exportPage)
            firstPage.continuationMarker = nil
            let first = firstPage
            let fields = recordType.fields.map(\.name).filter { Schema.systemFieldTypes[$0] == nil }
            var headers = DashboardRenderer.securityHeaders
            headers[.contentType] = format == "json" ? "application/json; charset=utf-8" : "text/csv; charset=utf-8"
            headers[.contentDisposition] = "attachment; filename=\"\(recordType.name).\(format)\""
            headers[.cacheControl] = "no-store"
            let service = pages.records
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    // A page at a time, as the query's continuation markers give them: nothing holds the whole type.
                    var request = first
                    var written = 0
                    try await writer.write(
                        ByteBuffer(string: format == "json" ? "{\"records\":[" : Self.csvLine(["recordName"] + fields)))
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                    repeat {
                        let page = try JSONDecoder().decode(
                            RecordsQueryResponse.self, from: Data(try await service.query(database, request).bytes))
                        for case .record(var record) in page.records {
                            record.zoneID = nil
                            if format == "json" {
                                let json = String(decoding: try encoder.encode(record), as: UTF8.self)
                                try await writer.write(ByteBuffer(string: (written == 0 ? "" : ",") + json))
                            } else {
                                let values = fields.map { record.fields?[$0].map(RecordFieldText.text) ?? "" }
                                try await writer.write(ByteBuffer(string: Self.csvLine([record.recordName ?? ""] + values)))
                            }
                            written += 1
                        }
                        request.continuationMarker = page.continuationMarker
                    } while request.continuationMarker != nil
                    if format == "json" { try await writer.write(ByteBuffer(string: "]}")) }
                    try await writer.finish(nil)
                })
        }
        group.post("import") { request, context in
            let query = DashboardForm(encoded: request.uri.query ?? "")
            let (viewer, scope) = try await pages.open(request, context, viewer, fields: query)
            let type = query.trimmed("type") ?? ""
            let back = scope.recordsPath + DashboardLinks.query(scope.queryItems + [("type", type)])
            return try await DashboardSubmission.run(request, done: back + "&notice=" + DashboardNotice.recordsImported.rawValue)
            {
                try await importRecords(request, viewer, scope, type: type)
            } failed: { error, status in
                var model = try await pages.queryPage(
                    viewer, scope, DashboardForm(encoded: "type=" + DashboardLinks.encoded(type)), request)
                model.chrome.error = error
                return DashboardRenderer.shared.page("records", model, status: status)
            }
        }
    }

    private func importRecords(_ request: Request, _ viewer: DashboardViewer, _ scope: RecordScope, type: String) async throws {
        let (bytes, _) = try await MultipartFile.collect(
            request.body, contentType: request.headers[.contentType], limit: Self.maxImportBytes,
            tooLarge: NimbusError(.requestTooLarge, "an import file holds at most 64 MB; split it"))
        let database = try await scope.database(viewer, server: server, baseURL: pages.baseURL(request))
        let schema = try await server.schemas.schema(database)
        guard let recordType = schema.recordTypes.first(where: { $0.name == type }) else {
            throw NimbusError.badRequest("record type \(type) is not in the \(scope.environment.rawValue) schema")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let isJSON = text.drop(while: \.isWhitespace).first.map { $0 == "{" || $0 == "[" } ?? false
        let records = try isJSON ? Self.jsonRecords(bytes, type: type) : Self.csvRecords(text, type: recordType)
        guard !records.isEmpty else { throw NimbusError.badRequest("the file holds no records") }
        for start in stride(from: 0, to: records.count, by: RecordService.maxOperations) {
            let batch = records[start..<min(start + RecordService.maxOperations, records.count)]
            let body = try await pages.records.modify(
                database,
                RecordsModifyRequest(operations: batch.map { RecordOperation(.forceReplace, $0) }, zoneID: scope.zoneID))
            let answer = try JSONDecoder().decode(RecordsResponse.self, from: Data(body.bytes))
            for case .failure(let failure) in answer.records {
                throw NimbusError(
                    failure.serverErrorCode,
                    "record \(failure.recordName ?? "") was refused: \(failure.reason) (\(start) records before its batch were saved)"
                )
            }
        }
    }

    /// `{"records": [...]}` as the export writes it, or a bare array of records.
    static func jsonRecords(_ bytes: Data, type: String) throws -> [RecordWire] {
        struct Export: Decodable { var records: [RecordWire] }
        let decoder = JSONDecoder()
        let records: [RecordWire]
        do {
            records =
                try (try? decoder.decode(Export.self, from: bytes))?.records ?? decoder.decode([RecordWire].self, from: bytes)
        } catch {
            throw NimbusError.badRequest("the JSON is not records as the export writes them: \(error)")
        }
        return try records.map { record in
            guard record.recordName != nil else { throw NimbusError.badRequest("every record in the JSON needs its recordName") }
            var record = record
            record.recordType = type
            record.recordChangeTag = nil
            return record
        }
    }

    /// A header of field names (and `recordName`), then one record a line, values as the dashboard writes them.
    static func csvRecords(_ text: String, type: Schema.RecordType) throws -> [RecordWire] {
        let rows = try CSV.rows(text)
        guard let header = rows.first else { return [] }
        guard let nameColumn = header.firstIndex(of: "recordName") else {
            throw NimbusError.badRequest("the CSV's first line names the columns, recordName among them")
        }
        var fields = [(column: Int, field: Schema.Field)]()
        for (column, name) in header.enumerated() where column != nameColumn {
            guard let field = type.fields.first(where: { $0.name == name }), field.type != "ASSET" else {
                throw NimbusError.badRequest("column \(name) is not a field of \(type.name) the dashboard can set from text")
            }
            fields.append((column, field))
        }
        return try rows.dropFirst().enumerated().map { line, row in
            guard row.count == header.count else {
                throw NimbusError.badRequest("line \(line + 2) has \(row.count) values for \(header.count) columns")
            }
            var values = [String: FieldValue]()
            for (column, field) in fields where !row[column].isEmpty {
                values[field.name] = try RecordFieldText.parse(
                    row[column], type: field.type, isList: field.isList, field: field.name)
            }
            return RecordWire(recordName: row[nameColumn], recordType: type.name, fields: values)
        }
    }

    static func csvLine(_ values: [String]) -> String {
        values.map { value in
            value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
                ? "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : value
        }.joined(separator: ",") + "\r\n"
    }
}

/// RFC 4180 CSV: fields separated by commas, quoted with `"` (doubled inside) when they hold a comma,
/// a quote or a line break; lines end with CRLF or LF.
enum CSV {
    static func rows(_ text: String) throws(NimbusError) -> [[String]] {
        var rows = [[String]]()
        var row = [String]()
        var field = ""
        var quoted = false
        var characters = text.makeIterator()
        var pending: Character? = nil
        func next() -> Character? {
            if let held = pending {
                pending = nil
                return held
            }
            return characters.next()
        }
        while let character = next() {
            if quoted {
                if character == "\"" {
                    let following = next()
                    if following == "\"" {
                        field.append("\"")
                    } else {
                        quoted = false
                        pending = following
                    }
                } else {
                    field.append(character)
                }
            } else if character == "\"" && field.isEmpty {
                quoted = true
            } else if character == "," {
                row.append(field)
                field = ""
            } else if character == "\n" || character == "\r\n" || character == "\r" {
                row.append(field)
                rows.append(row)
                row = []
                field = ""
            } else {
                field.append(character)
            }
        }
        guard !quoted else { throw .badRequest("the CSV ends inside a quoted value") }
        if !field.isEmpty || !row.isEmpty {
            row.append(field)
            rows.append(row)
        }
        return rows
    }
}
