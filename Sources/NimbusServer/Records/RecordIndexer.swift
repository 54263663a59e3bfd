import Foundation
import NimbusCore
import NimbusStore

/// The index rows of a record: its name and creator, the system fields its type's schema indexes, every
/// indexable field value, and the words of each of its strings. Every field is indexed whatever the schema
/// says, so marking a field QUERYABLE, SORTABLE or SEARCHABLE later needs no rebuild; the schema decides
/// only what queries may use. System fields are indexed only once the schema declares their index, as in
/// CloudKit (`"___modTime" TIMESTAMP SORTABLE`): most apps never query them, and their rows were three of
/// the eight a short record wrote. Declaring one adds the rows of the records already stored
/// (`backfills`). The creator is always indexed: roles that let users read only their own records filter
/// by it. A search of all text (`self CONTAINS`) looks through the words of each SEARCHABLE field, so they
/// are not indexed twice.
enum RecordIndexer {
    /// Record names are the entries' keys, which the store indexes itself.
    static let recordNameField = IndexEntry.keyField
    static let createTimeField = "___createTime"
    static let modTimeField = "___modTime"
    static let createdByField = "___createdBy"
    static let modifiedByField = "___modifiedBy"
    static let parentField = "___parent"
    /// The share covering the record, for queries of participants in a shared hierarchy.
    static let shareField = "___share"
    /// What filters name to search the words of every SEARCHABLE field, for `self CONTAINS 'milk'`.
    static let allTokensField = Predicate.allTokensField

    /// The index field holding the words of a STRING field.
    static func tokensField(_ field: String) -> String { "tokens:" + field }

    /// The system fields indexed only when the schema declares them (their index fields are their schema names).
    static let declarableSystemFields: Set = [createTimeField, modTimeField, modifiedByField]

    /// The declarable system fields a record type's schema gives an index.
    static func indexedSystemFields(_ type: Schema.RecordType?) -> Set<String> {
        Set(type?.fields.filter { declarableSystemFields.contains($0.name) && ($0.queryable || $0.sortable) }.map(\.name) ?? [])
    }

    /// Every row a record could have, as a query subscription matches it: all system fields.
    static func allRows(name: String, record: StoredRecord) -> [IndexEntry] {
        rows(name: name, record: record, share: nil, systemFields: declarableSystemFields)
            + [IndexEntry(field: IndexEntry.keyField, value: .text(name))]
    }

    /// The index rows a stored record must have (`nimbus check`): all but those of declarable system fields
    /// (they depend on the schema) and of its share (on its hierarchy), which it may have too.
    static func expectedIndex(name: String, payload: Data) throws -> ExpectedIndexRows {
        let record = try StoredRecord(payload: payload)
        return ExpectedIndexRows(
            kind: record.recordType,
            rows: Set(
                rows(name: name, record: record, share: nil, systemFields: []) + [
                    IndexEntry(field: IndexEntry.keyField, value: .text(name))
                ]),
            optionalFields: declarableSystemFields.union([shareField]))
    }

    /// What the store indexes a record by, the system fields in `systemFields` among them.
    static func rows(name: String, record: StoredRecord, share: String?, systemFields: Set<String>) -> [IndexEntry] {
        var rows = [IndexEntry(field: createdByField, value: .text(record.created.userRecordName))]
        rows += systemRows(record, systemFields)
        if let parent = record.parent { rows.append(IndexEntry(field: parentField, value: .text(parent.recordName))) }
        if let share { rows.append(IndexEntry(field: shareField, value: .text(share))) }
        for (field, value) in record.fields.sorted(by: { $0.key < $1.key }) {
            let values = indexValues(value)
            rows += values.enumerated().map { IndexEntry(field: field, position: $0.offset, value: $0.element) }
            let words = tokens(value)
            rows += words.enumerated().map {
                IndexEntry(field: tokensField(field), position: $0.offset, value: .text($0.element))
            }
        }
        return rows
    }

    /// The rows of the system fields in `fields`.
    static func systemRows(_ record: StoredRecord, _ fields: Set<String>) -> [IndexEntry] {
        [
            (createTimeField, IndexValue.integer(record.created.timestamp)),
            (modTimeField, .integer(record.modified.timestamp)),
            (modifiedByField, .text(record.modified.userRecordName)),
        ].filter { fields.contains($0.0) }.map { IndexEntry(field: $0.0, value: $0.1) }
    }

    /// What the records of `container`'s `environment` stored before `new` replaced `old` lack: the rows of
    /// the system fields `new` declares an index on and `old` did not, per record type.
    static func backfills(from old: Schema, to new: Schema, container: String, environment: RecordDatabase.Environment)
        -> [IndexBackfill]
    {
        new.recordTypes.compactMap { type in
            let added = indexedSystemFields(type).subtracting(indexedSystemFields(old.recordTypes.first { $0.name == type.name }))
            guard !added.isEmpty else { return nil }
            return IndexBackfill(container: container, environment: environment.rawValue, kind: type.name) { payload in
                systemRows(try StoredRecord(payload: payload), added)
            }
        }
    }

    /// The rows a backfill of `kind` gives an entry by `schema` as it is now: every system field it
    /// declares an index on (rows an entry has already stay, so more than the backfill first asked for is
    /// harmless). What a backfill cut off by a stop resumes with.
    static func backfillRows(of kind: String, in schema: Schema) -> @Sendable (Data) throws -> [IndexEntry] {
        let fields = indexedSystemFields(schema.recordTypes.first { $0.name == kind })
        return { payload in systemRows(try StoredRecord(payload: payload), fields) }
    }

    /// What a field value is indexed (and compared in queries) as; BYTES and assets are not indexable.
    static func indexValues(_ value: FieldValue) -> [IndexValue] {
        switch value {
        case .string(let text): [.text(text)]
        case .int64(let integer): [.integer(integer)]
        case .double(let real): [.real(real)]
        case .timestamp(let date): [.integer(date.milliseconds)]
        case .reference(let reference): [.text(reference.recordName)]
        case .location(let location): [.point(latitude: location.latitude, longitude: location.longitude)]
        case .bytes, .asset: []
        case .list(let values, _): values.flatMap(indexValues)
        }
    }

    /// The distinct lowercased words of a STRING value (or list of them), in order of appearance.
    static func tokens(_ value: FieldValue) -> [String] {
        switch value {
        case .string(let text): return words(text)
        case .list(let values, _):
            var seen = Set<String>()
            return values.flatMap(tokens).filter { seen.insert($0).inserted }
        default: return []
        }
    }

    static func words(_ text: String) -> [String] {
        var seen = Set<String>()
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else {
            return text.lowercased().split { !$0.isLetter && !$0.isNumber }.map(String.init).filter { seen.insert($0).inserted }
        }
        // ASCII text, most of it, is split on its bytes: the letters and digits are the same, without
        // looking up Unicode properties character by character.
        return text.utf8.split { !isASCIILetterOrDigit($0) }
            .map { String(decoding: $0.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self) }
            .filter { seen.insert($0).inserted }
    }

    private static func isASCIILetterOrDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
    }
}
