import NimbusCore
import NimbusStore

/// How a development batch grows its schema, inside the zone transaction that saves it. Records are
/// checked against the stored schema extended with every type and field the batch names; the stored
/// schema then gains only those of the records actually saved, so a batch that fails, or a record that
/// fails within one, adds nothing. Production schemas never grow.
struct SchemaGrowth {
    /// A record of the batch that may add to the schema: its name, type and fields.
    typealias Record = (name: String, type: String, fields: [String: FieldValue])

    /// The most fields a record type may have (system fields declared for indexes included).
    static let maxFieldsPerType = 1000
    /// The most fields one request may add to the schema: growth is checked and written inside the zone's
    /// write transaction, so a request adding thousands would hold every other writer of the database.
    static let maxNewFieldsPerRequest = 200

    /// What the batch's records are checked against.
    let schema: Schema
    private let stored: Schema?
    private let records: [Record]

    /// `cached` is the schema the request started with, parsed only again if the store's text has changed
    /// since: the records are checked and indexed by the schema as this transaction sees it, since a
    /// deploy, an import or another batch may have committed since the cache was read (a system field's
    /// newly declared index, whose rows the change added to the records stored before, must be written
    /// for these records too).
    init(_ database: RecordDatabase, cached: SchemaRegistry.Stored, records: [Record], in transaction: any RecordZoneTransaction)
        throws
    {
        self.records = records
        let text = try transaction.schemaText(container: database.container, environment: database.environment.rawValue)
        let current = text == cached.text ? cached.schema : try text.map { try Schema(parsing: $0) } ?? Schema()
        let used = records.map { (type: $0.type, fields: $0.fields) }
        guard database.environment == .development, SchemaRegistry.lacks(current, used) else {
            (schema, stored) = (current, nil)
            return
        }
        let additions = SchemaRegistry.additions(current, used)
        try Self.check(additions, growing: current)
        (schema, stored) = (SchemaRegistry.extended(current, with: additions), current)
    }

    /// Refuses growth past `maxNewFieldsPerRequest`, or a type past `maxFieldsPerType`.
    static func check(_ additions: [(type: String, fields: [Schema.Field])], growing schema: Schema) throws(NimbusError) {
        let added = additions.reduce(0) { $0 + $1.fields.count }
        guard added <= maxNewFieldsPerRequest else {
            throw .badRequest(
                "this request would add \(added) fields to the schema; one request may add at most \(maxNewFieldsPerRequest) (split it, or import the schema)"
            )
        }
        for (type, fields) in additions {
            let total = (schema.recordTypes.first { $0.name == type }?.fields.count ?? 0) + fields.count
            guard total <= maxFieldsPerType else {
                throw .badRequest("record type \(type) would have \(total) fields; a record type has at most \(maxFieldsPerType)")
            }
        }
    }

    /// Stores the additions of the records saved (worked out only when the batch may add something);
    /// whether there were any.
    func commit(saved: @autoclosure () -> Set<String>, _ database: RecordDatabase, in transaction: any RecordZoneTransaction)
        throws
        -> Bool
    {
        guard let stored else { return false }
        let saved = saved()
        let grown = SchemaRegistry.extended(
            stored, with: records.filter { saved.contains($0.name) }.map { (type: $0.type, fields: $0.fields) })
        guard grown != stored else { return false }
        try transaction.setSchemaText(grown.text, container: database.container, environment: database.environment.rawValue)
        return true
    }
}
