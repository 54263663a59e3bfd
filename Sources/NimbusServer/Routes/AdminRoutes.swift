import Hummingbird
import NimbusCore

/// `/admin/1/...`: developer resources, for administrator accounts only.
struct AdminRoutes {
    let service: AdminService
    var schemas: SchemaService { SchemaService(server: service.server) }
    var roles: RoleService { RoleService(server: service.server) }

    func register(on router: Router<AppRequestContext>) {
        let admin = router.group("admin/1", context: UserRequestContext.self)
            .add(middleware: RequireAdministrator(service: service))
        admin.get("teams") { _, _ in ListResponse(items: try await service.server.store.teams()) }
        admin.post("teams") { request, context in
            try await service.createTeam(try await request.decode(as: CreateTeamRequest.self, context: context))
        }
        admin.get("apps") { _, _ in ListResponse(items: try await service.server.store.apps()) }
        admin.post("apps") { request, context in
            try await service.createApp(try await request.decode(as: CreateAppRequest.self, context: context))
        }
        admin.get("containers") { _, _ in ListResponse(items: try await service.server.store.containers()) }
        admin.post("containers") { request, context in
            try await service.createContainer(try await request.decode(as: Container.self, context: context))
        }
        admin.put("containers/:container/packages") { request, context in
            try await service.setPackageExtensions(
                try await request.decode(as: PackageExtensionsRequest.self, context: context),
                of: context.parameters.require("container"))
        }
        admin.post("apps/:bundleID/entitlements") { request, context in
            let body = try await request.decode(as: EntitlementRequest.self, context: context)
            return try await service.entitle(bundleID: context.parameters.require("bundleID"), container: body.container)
        }
        admin.delete("apps/:bundleID/entitlements/:container") { _, context in
            try await service.revokeEntitlement(
                bundleID: context.parameters.require("bundleID"), container: context.parameters.require("container"))
        }
        admin.get("tokens") { _, _ in ListResponse(items: try await service.server.store.apiTokens().map(\.info)) }
        admin.post("tokens") { request, context in
            try await service.createAPIToken(try await request.decode(as: CreateAPITokenRequest.self, context: context))
        }
        admin.delete("tokens/:tokenID") { _, context in
            try await service.revokeAPIToken(id: context.parameters.require("tokenID"))
            return HTTPResponse.Status.noContent
        }
        admin.get("users") { _, _ in ListResponse(items: try await service.users()) }
        admin.get("keys") { _, _ in ListResponse(items: try await service.server.store.serverKeys().map(\.info)) }
        admin.post("keys") { request, context in
            try await service.createServerKey(
                try await request.decode(as: CreateServerKeyRequest.self, context: context), creator: context.session)
        }
        admin.delete("keys/:keyID") { _, context in
            try await service.revokeServerKey(id: context.parameters.require("keyID"))
            return HTTPResponse.Status.noContent
        }
        admin.get("containers/:container/schema/:environment") { _, context in
            try await schemas.export(
                container: context.parameters.require("container"), environment: context.parameters.require("environment"))
        }
        admin.put("containers/:container/schema/:environment") { request, context in
            try await schemas.importSchema(
                container: context.parameters.require("container"), environment: context.parameters.require("environment"),
                try await request.decode(as: SchemaDocument.self, context: context))
        }
        admin.post("containers/:container/schema/deploy") { request, context in
            try await schemas.deploy(
                container: context.parameters.require("container"),
                try await request.decode(as: SchemaDeployRequest.self, context: context))
        }
        admin.get("containers/:container/roles/:environment") { _, context in
            try await roles.list(
                container: context.parameters.require("container"), environment: context.parameters.require("environment"))
        }
        admin.post("containers/:container/roles/:environment/:role/members") { request, context in
            try await roles.add(
                container: context.parameters.require("container"), environment: context.parameters.require("environment"),
                role: context.parameters.require("role"), try await request.decode(as: RoleMemberRequest.self, context: context))
        }
        admin.delete("containers/:container/roles/:environment/:role/members/:userRecordName") { _, context in
            try await roles.remove(
                container: context.parameters.require("container"), environment: context.parameters.require("environment"),
                role: context.parameters.require("role"), userRecordName: context.parameters.require("userRecordName"))
        }
    }
}

struct RequireAdministrator: RouterMiddleware {
    let service: AdminService

    func handle(
        _ request: Request, context: UserRequestContext, next: (Request, UserRequestContext) async throws -> Response
    ) async throws -> Response {
        try await service.requireAdministrator(context.session)
        return try await next(request, context)
    }
}
