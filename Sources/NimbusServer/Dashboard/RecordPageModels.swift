import Foundation
import NimbusCore
import NimbusStore

/// The records page: the database and zone, the type, filters, a sort, the columns, and one page of
/// results with a link to the next (a continuation marker; no page counts the type).
struct RecordsPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var container: String
    var path: String
    var environments: [Option]
    var databases: [Option]
    var isPrivate: Bool
    var users: [Option] = []
    var zone: String
    var type: String
    var types: [Option]
    /// The form's filters, then an empty one to add another.
    var filters: [FilterRow]
    var sortFields: [Option]
    var descending: Bool
    var columns: [Option]
    var headers: [String] = []
    var rows: [Row] = []
    var hasType: Bool
    var empty = false
    var nextLink: String?
    var newLink: String
    var schemaLink: String
    var exportJSON: String
    var exportCSV: String
    var importAction: String

    struct FilterRow: Sendable {
        var fields: [Option]
        var comparators: [Option]
        var value: String
        /// The empty row's value box keeps the id the page's script and tests know it by.
        var isLast: Bool
    }

    /// The filters a form asks for: its `field`, `cmp` and `value` fields taken in turn, those naming no
    /// field left out.
    static func filters(_ query: DashboardForm) -> [(field: String, comparator: String, value: String)] {
        let (fields, comparators, values) = (query.values("field"), query.values("cmp"), query.values("value"))
        return fields.indices.compactMap { index in
            let field = fields[index].trimmingCharacters(in: .whitespaces)
            guard !field.isEmpty else { return nil }
            let comparator = index < comparators.count ? comparators[index] : QueryFilter.Comparator.equals.rawValue
            return (field, comparator, index < values.count ? values[index] : "")
        }
    }

    struct Row: Sendable {
        var name: String
        var link: String
        var cells: [String]
        var modified: String
    }

    init(_ viewer: DashboardViewer, _ scope: RecordScope, schema: Schema, query: DashboardForm, notice: String?) {
        chrome = DashboardChrome(title: "Records of \(scope.container)", viewer: viewer, notice: notice)
        container = scope.container
        path = scope.recordsPath
        environments = RecordDatabase.Environment.allCases.map {
            Option(value: $0.rawValue, label: $0.rawValue.capitalized, selected: $0 == scope.environment)
        }
        databases = [RecordDatabase.Scope.public, .private].map {
            Option(value: $0.rawValue, label: $0.rawValue.capitalized, selected: $0 == scope.scope)
        }
        isPrivate = scope.scope == .private
        zone = scope.zone
        type = query.trimmed("type") ?? schema.recordTypes.first?.name ?? ""
        let chosenType = type
        types = schema.recordTypes.map { Option(value: $0.name, label: $0.name, selected: $0.name == chosenType) }
        let declared = (schema.recordTypes.first { $0.name == chosenType }?.fields ?? []).filter {
            Schema.systemFieldTypes[$0.name] == nil
        }
        hasType = schema.recordTypes.contains { $0.name == chosenType }
        let asked = Self.filters(query) + [(field: "", comparator: QueryFilter.Comparator.equals.rawValue, value: "")]
        filters = asked.enumerated().map { number, filter in
            FilterRow(
                fields: declared.map {
                    Option(value: $0.name, label: "\($0.name) (\($0.wireType))", selected: $0.name == filter.field)
                },
                comparators: QueryFilter.Comparator.allCases.filter { $0 != .near }.map {
                    Option(value: $0.rawValue, label: $0.rawValue, selected: $0.rawValue == filter.comparator)
                }, value: filter.value, isLast: number == asked.count - 1)
        }
        let sort = query.trimmed("sort")
        sortFields = declared.map { Option(value: $0.name, label: $0.name, selected: $0.name == sort) }
        descending = query.value("order") == "descending"
        let shown = Set(query.values("show"))
        columns = declared.map {
            Option(value: $0.name, label: $0.name, selected: shown.isEmpty ? true : shown.contains($0.name))
        }
        newLink = scope.recordsPath + "/new" + DashboardLinks.query(scope.queryItems + [("type", chosenType)])
        schemaLink = "/dashboard/containers/" + DashboardLinks.encoded(scope.container) + "/schema"
        let kept = query.fields.filter { $0.name != "marker" && $0.name != "notice" }.map { ($0.name, Optional($0.value)) }
        let current = DashboardLinks.query(
            scope.queryItems + kept.filter { !["env", "db", "user", "zone", "type"].contains($0.0) } + [("type", chosenType)])
        exportJSON = scope.recordsPath + "/export/json" + current
        exportCSV = scope.recordsPath + "/export/csv" + current
        importAction =
            scope.recordsPath + "/import"
            + DashboardLinks.query(scope.queryItems + [("type", chosenType), ("csrf", viewer.csrfToken)])
    }

    mutating func show(_ answer: RecordsQueryResponse, scope: RecordScope, query: DashboardForm) {
        let shown = columns.filter(\.selected).map(\.value)
        headers = shown
        rows = answer.records.compactMap { result in
            guard case .record(let record) = result, let name = record.recordName else { return nil }
            return Row(
                name: name, link: scope.recordPath(name),
                cells: shown.map { record.fields?[$0].map(RecordFieldText.text) ?? "" },
                modified: record.modified.map { ISO8601DateFormatter().string(from: Date(milliseconds: $0.timestamp)) } ?? "")
        }
        empty = rows.isEmpty
        if let marker = answer.continuationMarker {
            let kept = query.fields.filter { $0.name != "marker" && $0.name != "notice" }.map { ($0.name, Optional($0.value)) }
            nextLink = scope.recordsPath + DashboardLinks.query(kept + [("marker", marker)])
        }
    }
}

/// One record: its fields as a form, its change tag, who created and last changed it from which device.
struct RecordPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var isNew: Bool
    var recordName: String
    var recordType: String
    var changeTag: String
    var action: String
    var deleteAction: String
    var backLink: String
    var hidden: [HiddenField]
    var fields: [FieldRow]
    var created: StampModel?
    var modified: StampModel?
    /// The record's latest versions, newest first (`RecordVersionNote.kept` at most).
    var history = [VersionRow]() {
        didSet { hasHistory = !history.isEmpty }
    }
    private(set) var hasHistory = false
    let historyDepth = RecordVersionNote.kept

    struct FieldRow: Sendable {
        var name: String
        var inputName: String
        var type: String
        var value: String
        var multiline: Bool
        var isAsset: Bool
        var downloadURL: String?
        /// Where a new file for a single ASSET field of a saved record is sent (query: scope, change tag, form token).
        var uploadAction: String?
        var referenceLink: String?
        var hint: String
    }

    struct StampModel: Sendable {
        var time: String
        var user: String
        var device: String
        var deviceID: String
    }

    struct VersionRow: Sendable {
        var changeTag: String
        var isCurrent: Bool
        var stamp: StampModel
        var change: String

        /// What a version did, in words.
        static func words(_ version: RecordVersion) -> String {
            var parts = [String]()
            if version.created {
                parts.append(version.fields.isEmpty ? "created" : "created with " + version.fields.joined(separator: ", "))
            } else if !version.fields.isEmpty {
                parts.append("changed " + version.fields.joined(separator: ", "))
            }
            if version.moved { parts.append("moved under another parent") }
            if version.shared { parts.append("entered or left a share") }
            let words = parts.isEmpty ? "saved with no field changed" : parts.joined(separator: "; ")
            return words.prefix(1).uppercased() + words.dropFirst()
        }
    }

    init(_ viewer: DashboardViewer, _ scope: RecordScope, type: Schema.RecordType, record: RecordWire, isNew: Bool) {
        let name = record.recordName ?? ""
        chrome = DashboardChrome(title: isNew ? "New \(type.name) record" : "\(type.name) \(name)", viewer: viewer)
        self.isNew = isNew
        recordName = name
        recordType = type.name
        changeTag = record.recordChangeTag ?? ""
        let recordPath = scope.recordsPath + "/" + DashboardLinks.encoded(name)
        action = isNew ? scope.recordsPath : recordPath
        deleteAction = recordPath + "/delete"
        backLink = scope.recordsPath + DashboardLinks.query(scope.queryItems + [("type", type.name)])
        hidden = scope.hiddenFields + [HiddenField(name: "type", value: type.name)]
        fields = type.fields.filter { Schema.systemFieldTypes[$0.name] == nil }.map { field in
            let value = record.fields?[field.name]
            var row = FieldRow(
                name: field.name, inputName: "field." + field.name, type: field.wireType,
                value: value.map(RecordFieldText.text) ?? "", multiline: field.isList || field.type == "STRING",
                isAsset: field.type == "ASSET", hint: Self.hint(field))
            if case .asset(let asset) = value { row.downloadURL = asset.downloadURL }
            if field.type == "ASSET", !field.isList, !isNew {
                row.uploadAction =
                    recordPath + "/files/" + DashboardLinks.encoded(field.name)
                    + DashboardLinks.query(
                        scope.queryItems + [
                            ("type", type.name), ("changeTag", record.recordChangeTag), ("csrf", viewer.csrfToken),
                        ])
            }
            if case .reference(let reference) = value, reference.zoneID == nil || reference.zoneID?.zoneName == scope.zone {
                row.referenceLink = scope.recordPath(reference.recordName)
            }
            return row
        }
    }

    /// Shows what was typed again after a refused save, so nothing is lost.
    mutating func refill(_ form: DashboardForm) {
        for index in fields.indices {
            if let typed = form.value(fields[index].inputName) { fields[index].value = typed }
        }
        if isNew, let name = form.value("recordName") { recordName = name }
    }

    private static func hint(_ field: Schema.Field) -> String {
        let element =
            switch field.type {
            case "TIMESTAMP": "a date and time, like 2026-11-28T14:30:00Z"
            case "REFERENCE": "a record name"
            case "LOCATION": "latitude, longitude"
            case "BYTES": "base64"
            case "INT64": "a whole number"
            case "DOUBLE": "a number"
            case "ASSET": "a file"
            default: "text"
            }
        return field.isList ? "one per line: \(element)" : element
    }
}
