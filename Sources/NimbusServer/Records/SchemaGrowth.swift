import NimbusCore
import NimbusStore

/// How a development batch grows its schema, inside the zone transaction that saves it. Records are
/// checked against the stored schema extended with every type and field the batch names; the stored
/// schema then gains only those of the records actually saved, so a batch that fails, or a record that
/// fails within one, adds nothing. Production schemas never grow.
struct SchemaGrowth {
    /// A record of the batch that may add to the schema: its name, type and fields.
    typealias Record = (name: String, type: String, fields: [String: FieldValue])

    /// What the batch's records are checked against.
    let schema: Schema
    private let stored: Schema?
    private let records: [Record]

    /// `cached` is the schema the request started with, parsed only again if the store's text has changed
    /// since: the records are checked and indexed by the schema as this transaction sees it, since a
    /// deploy, an import or another batch may have committed since the cache was read (a system field's
    /// newly declared index, whose rows the change added to the records stored before, must be written
    /// for these records too).
    init(_ database: RecordDatabase, cached: SchemaRegistry.Stored, records: [Record], in transaction: any ZoneTransaction) throws {
        self.records = records
        let text = try transaction.schemaText(container: database.container, environment: database.environment.rawValue)
        let current = text == cached.text ? cached.schema : try text.map { try Schema(parsing: $0) } ?? Schema()
        let used = records.map { (type: $0.type, fields: $0.fields) }
        guard database.environment == .development, SchemaRegistry.lacks(current, used) else {
            (schema, stored) = (current, nil)
            return
        }
        (schema, stored) = (SchemaRegistry.extended(current, with: used), current)
    }

    /// Stores the additions of the records saved (worked out only when the batch may add something);
    /// whether there were any.
    func commit(saved: @autoclosure () -> Set<String>, _ database: RecordDatabase, in transaction: any ZoneTransaction) throws -> Bool {
        guard let stored else { return false }
        let saved = saved()
        let grown = SchemaRegistry.extended(
            stored, with: records.filter { saved.contains($0.name) }.map { (type: $0.type, fields: $0.fields) })
        guard grown != stored else { return false }
        try transaction.setSchemaText(grown.text, container: database.container, environment: database.environment.rawValue)
        return true
    }
}
