import NimbusCore
import NimbusStore

/// Schema tooling for developers: export, import into development, and deploy to production.
struct SchemaService: Sendable {
    let server: ServerState

    func environment(_ name: String) throws -> RecordDatabase.Environment {
        guard let environment = RecordDatabase.Environment(rawValue: name) else {
            throw NimbusError.badRequest("environment must be development or production, not \(name)")
        }
        return environment
    }

    func container(_ identifier: String) async throws -> String {
        guard try await server.store.container(identifier: identifier) != nil else {
            throw NimbusError.notFound("container \(identifier) does not exist")
        }
        return identifier
    }

    func export(container: String, environment: String) async throws -> SchemaDocument {
        let schema = try await server.schemas.schema(
            container: try await self.container(container), environment: try self.environment(environment))
        return SchemaDocument(text: schema.text)
    }

    /// Replaces the development schema with an imported one. Like a deploy it may only add: records saved
    /// under the current schema must stay readable. Production changes only by deploys.
    func importSchema(container: String, environment: String, _ document: SchemaDocument) async throws -> SchemaDocument {
        guard try self.environment(environment) == .development else {
            throw NimbusError.badRequest("import into development, then deploy to production")
        }
        let imported: Schema
        do {
            imported = try Schema(parsing: document.text)
        } catch {
            throw NimbusError.badRequest("the schema does not parse: \(error)")
        }
        let schema = try await editDevelopment(container: container, what: "the import") { $0 = imported }
        return SchemaDocument(text: schema.text)
    }

    /// Changes the development schema (a type created, a field added, indexes set), under the import's
    /// rule: it may only add to what development has.
    @discardableResult
    func editDevelopment(
        container: String, what: String = "the change", _ change: @escaping @Sendable (inout Schema) throws -> Void
    ) async throws -> Schema {
        let container = try await self.container(container)
        return try await server.schemas.update(container: container, environment: .development) { current in
            var edited = current
            try change(&edited)
            try Self.validateNames(edited)
            let diff = SchemaDiff(from: current, to: edited)
            guard diff.isDeployable else {
                throw NimbusError.badRequest(
                    "\(what) would remove or retype what development has: "
                        + diff.violations.map(\.description).joined(separator: "; "))
            }
            return edited
        }
    }

    /// Resets development to production, as CloudKit's console does: every development record, zone and
    /// subscription of the container is deleted first (records of removed fields could not be read
    /// under the reset schema), then the schema becomes production's. Returns how many zones it deleted.
    func resetDevelopment(container: String) async throws -> Int {
        let container = try await self.container(container)
        var deleted = 0
        for kind in [ZoneAddress.Service.Kind.records, .recordSubscriptions] {
            for zone in try await server.store.zoneKeys(of: kind)
            where zone.address.service.container == container
                && zone.address.service.environment == RecordDatabase.Environment.development.rawValue
            {
                do {
                    try await server.store.deleteZone(zone)
                    deleted += 1
                } catch StoreError.missing {
                    // Deleted meanwhile by its owner: what a reset wants.
                }
            }
        }
        let production = try await server.schemas.schema(container: container, environment: .production)
        try await server.schemas.update(container: container, environment: .development) { _ in production }
        return deleted
    }

    /// Copies the development schema to production after checking that production only grows.
    func deploy(container: String, _ request: SchemaDeployRequest) async throws -> SchemaDeployResponse {
        let container = try await self.container(container)
        let development = try await server.schemas.schema(container: container, environment: .development)
        let production = try await server.schemas.schema(container: container, environment: .production)
        let diff = SchemaDiff(from: production, to: development)
        let answer = SchemaDeployResponse(
            changes: diff.changes.map(\.description), violations: diff.violations.map(\.description), deployed: false)
        if request.dryRun == true { return answer }
        guard diff.isDeployable else {
            throw NimbusError.badRequest("production is additive-only: " + answer.violations.joined(separator: "; "))
        }
        try await server.schemas.update(container: container, environment: .production) { current in
            // Checked again inside the update: a deploy racing another must not remove what it added.
            let diff = SchemaDiff(from: current, to: development)
            guard diff.isDeployable else {
                throw NimbusError.badRequest(
                    "production is additive-only: " + diff.violations.map(\.description).joined(separator: "; "))
            }
            return development
        }
        return SchemaDeployResponse(changes: answer.changes, violations: [], deployed: true)
    }

    private static func validateNames(_ schema: Schema) throws {
        for type in schema.recordTypes {
            try Identifiers.validateSchemaName(type.name, what: "record type")
            guard type.fields.count <= SchemaGrowth.maxFieldsPerType else {
                throw NimbusError.badRequest(
                    "record type \(type.name) has \(type.fields.count) fields; a record type has at most \(SchemaGrowth.maxFieldsPerType)"
                )
            }
            for field in type.fields {
                guard let systemType = Schema.systemFieldTypes[field.name] else {
                    try Identifiers.validateSchemaName(field.name, what: "field name")
                    continue
                }
                guard field.wireType == systemType else {
                    throw NimbusError.badRequest(
                        "system field \(field.name) of record type \(type.name) is \(systemType), not \(field.wireType)")
                }
            }
        }
    }
}
