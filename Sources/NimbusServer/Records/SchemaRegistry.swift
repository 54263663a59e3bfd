import NimbusCore
import NimbusStore
import Synchronization

/// The schemas of every container environment, cached in memory and kept in the store as CloudKit
/// schema text. In development, saving records of a new type or with new fields extends the schema.
final class SchemaRegistry: Sendable {
    private let store: any Store
    private let cache = Mutex<Cache>(Cache())

    /// Schemas by "container/environment", with the text each was read from. A load that started before
    /// the schema last changed does not store what it read, so the cache never goes back to an older schema.
    private struct Cache {
        var schemas = [String: Stored]()
        var generations = [String: Int]()
        /// Bumped when every schema is dropped at once.
        var epoch = 0
    }

    /// A schema and the stored text it was read from (nil: none stored yet).
    struct Stored: Sendable {
        var schema: Schema
        var text: String?
    }

    /// Tells the other nodes sharing the store that a schema changed.
    private let changed: @Sendable () -> Void

    init(store: any Store, changed: @escaping @Sendable () -> Void = {}) {
        self.store = store
        self.changed = changed
    }

    func schema(_ database: RecordDatabase) async throws -> Schema {
        try await schema(container: database.container, environment: database.environment)
    }

    func schema(container: String, environment: RecordDatabase.Environment) async throws -> Schema {
        try await stored(container: container, environment: environment).schema
    }

    func stored(container: String, environment: RecordDatabase.Environment) async throws -> Stored {
        let key = Self.key(container, environment)
        let (cached, generation, epoch) = cache.withLock { ($0.schemas[key], $0.generations[key, default: 0], $0.epoch) }
        if let cached { return cached }
        let text = try await store.schemaText(container: container, environment: environment.rawValue)
        let stored = Stored(schema: try text.map { try Schema(parsing: $0) } ?? Schema(), text: text)
        cache.withLock {
            if $0.generations[key, default: 0] == generation && $0.epoch == epoch { $0.schemas[key] = stored }
        }
        return stored
    }

    /// Replaces a schema with what `update` makes of it, atomically, indexing the records already stored
    /// by the system fields it newly declares indexes on; returns the new schema.
    @discardableResult
    func update(
        container: String, environment: RecordDatabase.Environment, _ update: @escaping @Sendable (Schema) throws -> Schema
    ) async throws -> Schema {
        let text = try await store.updateSchemaText(container: container, environment: environment.rawValue) { text in
            let old = try text.map { try Schema(parsing: $0) } ?? Schema()
            let new = try update(old)
            return (new.text, RecordIndexer.backfills(from: old, to: new, container: container, environment: environment))
        }
        let schema = try Schema(parsing: text)
        forget(container: container, environment: environment)
        return schema
    }

    /// Drops the cached schema, after a change made elsewhere (inside a zone transaction) has committed,
    /// and tells the other nodes to drop theirs.
    func forget(container: String, environment: RecordDatabase.Environment) {
        let key = Self.key(container, environment)
        cache.withLock {
            $0.schemas[key] = nil
            $0.generations[key, default: 0] += 1
        }
        changed()
    }

    /// Drops every cached schema: another node changed one.
    func forgetAll() {
        cache.withLock {
            $0.epoch += 1
            $0.schemas = [:]
        }
    }

    private static func key(_ container: String, _ environment: RecordDatabase.Environment) -> String {
        "\(container)/\(environment.rawValue)"
    }

    /// `schema` with the record types and fields these records use that it lacks; the first value of a
    /// field fixes its type. New fields are QUERYABLE and SORTABLE (and STRINGs SEARCHABLE), so queries
    /// work on them at once.
    static func extended(_ schema: Schema, with records: [(type: String, fields: [String: FieldValue])]) -> Schema {
        extended(schema, with: additions(schema, records))
    }

    static func extended(_ schema: Schema, with additions: [(type: String, fields: [Schema.Field])]) -> Schema {
        var schema = schema
        for (type, fields) in additions {
            var recordType = schema.recordTypes.first { $0.name == type } ?? Schema.RecordType(name: type)
            recordType.fields += fields
            if let index = schema.recordTypes.firstIndex(where: { $0.name == type }) {
                schema.recordTypes[index] = recordType
            } else {
                schema.recordTypes.append(recordType)
            }
        }
        return schema
    }

    static func lacks(_ schema: Schema, _ records: [(type: String, fields: [String: FieldValue])]) -> Bool {
        !additions(schema, records).isEmpty
    }

    /// Types and fields the records use that `schema` does not have, in the order they first appear.
    static func additions(_ schema: Schema, _ records: [(type: String, fields: [String: FieldValue])])
        -> [(type: String, fields: [Schema.Field])]
    {
        var additions = [(type: String, fields: [Schema.Field])]()
        var added = [String: Set<String>]()
        for (type, fields) in records {
            let known = Set(schema.recordTypes.first { $0.name == type }?.fields.map(\.name) ?? [])
            let isNewType = !schema.recordTypes.contains { $0.name == type }
            var index = additions.firstIndex { $0.type == type }
            if index == nil, isNewType || fields.keys.contains(where: { !known.contains($0) }) {
                additions.append((type, []))
                index = additions.count - 1
            }
            guard let index else { continue }
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) where !known.contains(name) {
                guard added[type, default: []].insert(name).inserted else { continue }
                additions[index].fields.append(field(name, value))
            }
        }
        return additions
    }

    private static func field(_ name: String, _ value: FieldValue) -> Schema.Field {
        let wireType = value.typeName
        let isList = wireType.hasSuffix("_LIST")
        let elementType = isList ? String(wireType.dropLast(5)) : wireType
        // The schema language calls asset fields ASSET; the wire calls their values ASSETID.
        let type = elementType == "ASSETID" ? "ASSET" : elementType
        let indexable = type != "BYTES" && type != "ASSET"
        return Schema.Field(
            name: name, type: type, isList: isList, queryable: indexable, sortable: indexable && !isList,
            searchable: type == "STRING")
    }
}
