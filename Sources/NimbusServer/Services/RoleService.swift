import HTTPTypes
import NimbusCore
import NimbusStore

/// Members of custom security roles (`CREATE ROLE` in a schema), for administrators: a role's GRANTs
/// apply in the public database to the accounts given it here.
struct RoleService: Sendable {
    let server: ServerState
    var schemas: SchemaService { SchemaService(server: server) }

    func list(container: String, environment: String) async throws -> ListResponse<RoleInfo> {
        let (container, environment) = (try await schemas.container(container), try schemas.environment(environment))
        let schema = try await server.schemas.schema(container: container, environment: environment)
        let holders = try await server.roles.holders(container: container, environment: environment)
        var roles = [RoleInfo]()
        for role in schema.roles {
            var members = [RoleInfo.Member]()
            for account in holders.filter({ $0.value.contains(role) }).keys.sorted() {
                members.append(
                    RoleInfo.Member(userRecordName: account, email: try await server.store.account(id: account)?.email ?? ""))
            }
            roles.append(RoleInfo(role: role, members: members))
        }
        return ListResponse(items: roles)
    }

    func add(container: String, environment: String, role: String, _ request: RoleMemberRequest) async throws -> ListResponse<
        RoleInfo
    > {
        let environmentName = environment
        let (container, environment) = (try await schemas.container(container), try schemas.environment(environment))
        try await requireRole(role, container: container, environment: environment)
        guard let account = try await server.store.account(email: request.email) else {
            throw NimbusError.notFound("no account has the email address \(request.email)")
        }
        try await server.roles.setMember(
            RoleMember(role: role, accountID: account.id), container: container, environment: environment, member: true)
        return try await list(container: container, environment: environmentName)
    }

    func remove(container: String, environment: String, role: String, userRecordName: String) async throws -> HTTPResponse.Status
    {
        let (container, environment) = (try await schemas.container(container), try schemas.environment(environment))
        try await requireRole(role, container: container, environment: environment)
        try await server.roles.setMember(
            RoleMember(role: role, accountID: userRecordName), container: container, environment: environment, member: false)
        return .noContent
    }

    private func requireRole(_ role: String, container: String, environment: RecordDatabase.Environment) async throws {
        guard try await server.schemas.schema(container: container, environment: environment).roles.contains(role) else {
            throw NimbusError.notFound(
                "role \(role) is not in the \(environment.rawValue) schema of \(container); add `CREATE ROLE \(role);` to it")
        }
    }
}
