import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// A container's schema, development and production side by side: create types, add fields, set
/// indexes, import and export the text schema, deploy with the diff shown first, reset development.
struct SchemaPages {
    let server: ServerState
    var schemas: SchemaService { SchemaService(server: server) }

    func register(on router: RouterGroup<DashboardRequestContext>, viewer: @escaping DashboardViewerLoader) {
        let container = router.group("containers/:container")
        container.get("") { _, context in
            DashboardRenderer.redirect(to: try Self.path(try context.parameters.require("container")) + "/schema")
        }
        container.get("schema") { request, context in
            let viewer = try await viewer(context)
            _ = try await viewer.developedContainer(try context.parameters.require("container"), in: server.store)
            return DashboardRenderer.shared.page(
                "schema",
                try await load(
                    viewer, container: try context.parameters.require("container"),
                    notice: DashboardNotice.message(in: request.uri)))
        }
        container.get("schema/:file") { _, context in
            _ = try await viewer(context).developedContainer(try context.parameters.require("container"), in: server.store)
            let file = try context.parameters.require("file")
            guard file.hasSuffix(".ckdb"), let environment = RecordDatabase.Environment(rawValue: String(file.dropLast(5))) else {
                throw NimbusError.notFound("no such file")
            }
            let container = try context.parameters.require("container")
            let text = try await schemas.export(container: container, environment: environment.rawValue).text
            var headers = DashboardRenderer.securityHeaders
            headers[.contentType] = "text/plain; charset=utf-8"
            headers[.contentDisposition] = "attachment; filename=\"\(environment.rawValue).ckdb\""
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        container.get("schema/backfills") { _, context in
            // What the page's script polls while a schema change indexes the records already saved.
            let viewer = try await viewer(context)
            let container = try await viewer.developedContainer(try context.parameters.require("container"), in: server.store)
            let backfills = try await Self.backfills(of: container.identifier, in: server.store)
            var headers = DashboardRenderer.securityHeaders
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "no-store"
            let body = try JSONEncoder().encode(["backfills": backfills])
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        container.post("schema/types") { request, context in
            try await submit(request, context, viewer, done: .typeCreated) { container, form in
                let name = form.trimmed("name") ?? ""
                try Identifiers.validateSchemaName(name, what: "record type")
                try await schemas.editDevelopment(container: container) { schema in
                    guard !schema.recordTypes.contains(where: { $0.name == name }) else {
                        throw NimbusError(.exists, "record type \(name) already exists")
                    }
                    schema.recordTypes.append(Schema.RecordType(name: name))
                }
            }
        }
        container.post("schema/fields") { request, context in
            try await submit(request, context, viewer, done: .fieldAdded) { container, form in
                let typeName = form.trimmed("type") ?? ""
                let fieldType = form.trimmed("fieldType") ?? ""
                guard Schema.fieldTypes.contains(fieldType) else {
                    throw NimbusError.badRequest(
                        "field type must be one of \(Schema.fieldTypes.sorted().joined(separator: ", "))")
                }
                let field = Schema.Field(
                    name: form.trimmed("name") ?? "", type: fieldType, isList: form.isChecked("list"),
                    queryable: form.isChecked("queryable"), sortable: form.isChecked("sortable"),
                    searchable: form.isChecked("searchable"))
                try Identifiers.validateSchemaName(field.name, what: "field name")
                try await schemas.editDevelopment(container: container) { schema in
                    let index = try Self.typeIndex(typeName, in: schema)
                    guard !schema.recordTypes[index].fields.contains(where: { $0.name == field.name }) else {
                        throw NimbusError(.exists, "record type \(typeName) already has a field \(field.name)")
                    }
                    schema.recordTypes[index].fields.append(field)
                }
            }
        }
        container.post("schema/indexes") { request, context in
            try await submit(request, context, viewer, done: .indexesSaved) { container, form in
                let typeName = form.trimmed("type") ?? ""
                let fieldName = form.trimmed("field") ?? ""
                try await schemas.editDevelopment(container: container) { schema in
                    let index = try Self.typeIndex(typeName, in: schema)
                    guard let field = schema.recordTypes[index].fields.firstIndex(where: { $0.name == fieldName }) else {
                        throw NimbusError.notFound("record type \(typeName) has no field \(fieldName)")
                    }
                    schema.recordTypes[index].fields[field].queryable = form.isChecked("queryable")
                    schema.recordTypes[index].fields[field].sortable = form.isChecked("sortable")
                    schema.recordTypes[index].fields[field].searchable = form.isChecked("searchable")
                }
            }
        }
        container.post("schema/roles") { request, context in
            try await submit(request, context, viewer, done: .roleCreated) { container, form in
                let name = form.trimmed("name") ?? ""
                try Identifiers.validateSchemaName(name, what: "role")
                try await schemas.editDevelopment(container: container) { schema in
                    guard !schema.roles.contains(name), !EnvironmentModel.builtInRoles.contains(name) else {
                        throw NimbusError(.exists, "role \(name) already exists")
                    }
                    schema.roles.append(name)
                }
            }
        }
        container.post("schema/grants") { request, context in
            try await submit(request, context, viewer, done: .grantSaved) { container, form in
                let (typeName, role) = (form.trimmed("type") ?? "", form.trimmed("role") ?? "")
                let permissions = Schema.Grant.Permission.allCases.filter { form.isChecked($0.rawValue.lowercased()) }
                try await schemas.editDevelopment(container: container) { schema in
                    let index = try Self.typeIndex(typeName, in: schema)
                    guard schema.roles.contains(role) || EnvironmentModel.builtInRoles.contains(role) else {
                        throw NimbusError.notFound("role \(role) is not in the development schema; create it first")
                    }
                    // A type without grants has the defaults: changing one role's keeps the others'.
                    var grants = schema.recordTypes[index].grants
                    if grants.isEmpty { grants = RecordAccess.defaultGrants }
                    grants.removeAll { $0.role == role }
                    if !permissions.isEmpty { grants.append(Schema.Grant(permissions, to: role)) }
                    guard !grants.isEmpty else {
                        throw NimbusError.badRequest(
                            "\(typeName) needs at least one grant: a type without any takes the defaults (READ to _world, "
                                + "CREATE to _icloud, WRITE to _creator)")
                    }
                    schema.recordTypes[index].grants = grants
                }
            }
        }
        container.post("schema/roles/members") { request, context in
            try await submit(request, context, viewer, done: .roleMemberAdded) { container, form in
                _ = try await RoleService(server: server).add(
                    container: container, environment: form.trimmed("environment") ?? "", role: form.trimmed("role") ?? "",
                    RoleMemberRequest(email: form.trimmed("email") ?? ""))
            }
        }
        container.post("schema/roles/members/remove") { request, context in
            try await submit(request, context, viewer, done: .roleMemberRemoved) { container, form in
                _ = try await RoleService(server: server).remove(
                    container: container, environment: form.trimmed("environment") ?? "", role: form.trimmed("role") ?? "",
                    userRecordName: form.trimmed("user") ?? "")
            }
        }
        container.post("schema/import") { request, context in
            try await submit(request, context, viewer, done: .schemaImported) { container, form in
                _ = try await schemas.importSchema(
                    container: container, environment: "development", SchemaDocument(text: form.value("text") ?? ""))
            }
        }
        container.get("schema/deploy") { _, context in
            let viewer = try await viewer(context)
            let container = try await viewer.developedContainer(try context.parameters.require("container"), in: server.store)
                .identifier
            let preview = try await schemas.deploy(container: container, SchemaDeployRequest(dryRun: true))
            return DashboardRenderer.shared.page("deploy", DeployPageModel(viewer, container: container, preview: preview))
        }
        container.post("schema/deploy") { request, context in
            try await submit(request, context, viewer, done: .schemaDeployed) { container, _ in
                _ = try await schemas.deploy(container: container, SchemaDeployRequest(dryRun: false))
            }
        }
        container.post("schema/reset") { request, context in
            try await submit(request, context, viewer, done: .developmentReset) { container, form in
                guard form.value("confirm") == container else {
                    throw NimbusError.badRequest("type the container's identifier to confirm the reset")
                }
                _ = try await schemas.resetDevelopment(container: container)
            }
        }
    }

    static func path(_ container: String) throws -> String { "/dashboard/containers/" + DashboardLinks.encoded(container) }

    /// The container's backfills under way (or cut off by a stop and waiting to resume), with how far each has come.
    static func backfills(of container: String, in store: any Store) async throws -> [BackfillModel] {
        try await store.pendingBackfills().filter { $0.container == container }.map {
            BackfillModel(kind: $0.kind, environment: $0.environment, percent: Int(($0.progress * 100).rounded(.down)))
        }
    }

    private static func typeIndex(_ name: String, in schema: Schema) throws -> Int {
        guard let index = schema.recordTypes.firstIndex(where: { $0.name == name }) else {
            throw NimbusError.notFound("record type \(name) is not in the development schema")
        }
        return index
    }

    private func submit(
        _ request: Request, _ context: DashboardRequestContext, _ viewer: DashboardViewerLoader, done: DashboardNotice,
        _ action: @escaping (String, DashboardForm) async throws -> Void
    ) async throws -> Response {
        let viewer = try await viewer(context)
        let container = try await viewer.developedContainer(try context.parameters.require("container"), in: server.store)
            .identifier
        let form = try await DashboardForm.read(request)
        return try await DashboardSubmission.run(
            request, done: try Self.path(container) + "/schema" + DashboardLinks.query([("notice", done.rawValue)])
        ) {
            try await action(container, form)
        } failed: { error, status in
            var model = try await load(viewer, container: container, notice: nil)
            model.chrome.error = error
            model.importText = form.value("text") ?? model.importText
            return DashboardRenderer.shared.page("schema", model, status: status)
        }
    }

    private func load(_ viewer: DashboardViewer, container: String, notice: String?) async throws -> SchemaPageModel {
        let container = try await schemas.container(container)
        let development = try await server.schemas.schema(container: container, environment: .development)
        let production = try await server.schemas.schema(container: container, environment: .production)
        let roles = RoleService(server: server)
        return SchemaPageModel(
            chrome: DashboardChrome(title: "Schema of \(container)", viewer: viewer, notice: notice),
            container: container, path: try Self.path(container),
            development: EnvironmentModel(
                development, .development, editable: true,
                members: try await roles.list(container: container, environment: "development").items),
            production: EnvironmentModel(
                production, .production, editable: false,
                members: try await roles.list(container: container, environment: "production").items),
            importText: development.text, backfills: try await Self.backfills(of: container, in: server.store))
    }
}

struct SchemaPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var container: String
    var path: String
    var development: EnvironmentModel
    var production: EnvironmentModel
    // The common types first, as a developer reaches for them.
    var fieldTypes = ["STRING", "INT64", "DOUBLE", "TIMESTAMP", "REFERENCE", "ASSET", "LOCATION", "BYTES"]
    var importText: String
    var backfills: [BackfillModel]
}

/// A schema change indexing the records already saved, as the page and its script show it.
struct BackfillModel: Sendable, Codable {
    var kind: String
    var environment: String
    var percent: Int
}

/// One environment's schema as the page shows it, with its roles' members (which change in either
/// environment, as CloudKit's do, while the schema changes in development only).
struct EnvironmentModel: Sendable {
    var name: String
    var environment: String
    var editable: Bool
    var roles: [RoleModel]
    /// The roles a grant can name: the built-in ones, then the schema's.
    var grantRoles: [String]
    var types: [TypeModel]
    var isEmpty: Bool

    static let builtInRoles = ["_world", "_icloud", "_creator"]

    struct RoleModel: Sendable {
        var role: String
        var members: [RoleInfo.Member]
    }

    struct TypeModel: Sendable {
        var name: String
        var fields: [FieldModel]
        var grants: [String]
        /// The type names no grant, so the defaults apply.
        var defaultGrants: Bool
        var editable: Bool
    }

    struct FieldModel: Sendable {
        var name: String
        var type: String
        var queryable: Bool
        var sortable: Bool
        var searchable: Bool
        var recordType: String
        var indexes: String
    }

    init(_ schema: Schema, _ environment: RecordDatabase.Environment, editable: Bool, members: [RoleInfo]) {
        name = environment.rawValue.capitalized
        self.environment = environment.rawValue
        self.editable = editable
        roles = members.map { RoleModel(role: $0.role, members: $0.members) }
        grantRoles = Self.builtInRoles + schema.roles
        types = schema.recordTypes.map { type in
            TypeModel(
                name: type.name,
                fields: type.fields.map { field in
                    FieldModel(
                        name: field.name, type: field.isList ? "LIST<\(field.type)>" : field.type, queryable: field.queryable,
                        sortable: field.sortable, searchable: field.searchable, recordType: type.name,
                        indexes: [
                            field.queryable ? "queryable" : nil, field.sortable ? "sortable" : nil,
                            field.searchable ? "searchable" : nil,
                        ].compactMap { $0 }.joined(separator: ", "))
                },
                grants: (type.grants.isEmpty ? RecordAccess.defaultGrants : type.grants).map {
                    "\($0.permissions.map(\.rawValue).joined(separator: ", ")) to \($0.role)"
                }, defaultGrants: type.grants.isEmpty,
                editable: editable)
        }
        isEmpty = schema.recordTypes.isEmpty
    }
}

struct DeployPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var container: String
    var path: String
    var changes: [String]
    var violations: [String]
    var deployable: Bool
    var unchanged: Bool

    init(_ viewer: DashboardViewer, container: String, preview: SchemaDeployResponse) {
        chrome = DashboardChrome(title: "Deploy \(container) to production", viewer: viewer)
        self.container = container
        path = "/dashboard/containers/" + DashboardLinks.encoded(container)
        changes = preview.changes
        violations = preview.violations
        deployable = preview.violations.isEmpty && !preview.changes.isEmpty
        unchanged = preview.changes.isEmpty && preview.violations.isEmpty
    }
}
