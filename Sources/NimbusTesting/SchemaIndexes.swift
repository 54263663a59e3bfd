import NimbusCore
import NimbusKit

extension TestServer {
    /// Declares indexes on system fields of a record type in a container's development schema, through the
    /// admin API as `nimbus schema import` would (queries may use a system field once the schema indexes it).
    /// `fields` are schema names, e.g. `___createTime`; each gets QUERYABLE and SORTABLE.
    package func indexSystemFields(_ fields: [String], of type: String, container: String) async throws {
        let client = NimbusClient(session: try await signInAdministrator(), apiToken: nil)
        let path = "/admin/1/containers/\(container)/schema/development"
        let current: SchemaDocument = try await client.send(.GET, path)
        var schema = try Schema(parsing: current.text)
        try schema.indexSystemFields(fields, of: type)
        let _: SchemaDocument = try await client.send(.PUT, path, body: SchemaDocument(text: schema.text))
    }
}
