import NimbusCore
import NimbusStore

/// The developer side: teams, apps, containers, entitlements, API tokens, and the list of users.
struct AdminService: Sendable {
    let server: ServerState

    func requireAdministrator(_ session: AuthenticatedSession) async throws {
        guard try await server.store.account(id: session.accountID)?.isAdministrator == true else {
            throw NimbusError.accessDenied("this route is for administrators; create one with `nimbus admin init`")
        }
    }

    func createTeam(_ request: CreateTeamRequest) async throws -> Team {
        let teamID = request.teamID ?? Self.generatedTeamID()
        try Identifiers.validateTeamID(teamID)
        guard !request.name.isEmpty, request.name.utf8.count <= 200 else {
            throw NimbusError.badRequest("name must be 1 to 200 bytes")
        }
        let team = Team(teamID: teamID, name: request.name)
        try await server.store.createTeam(team)
        return team
    }

    func createApp(_ request: CreateAppRequest) async throws -> App {
        try Identifiers.validateBundleID(request.bundleID)
        try Identifiers.validateTeamID(request.teamID)
        let storeIdentifier = request.keyValueStoreIdentifier ?? "\(request.teamID).\(request.bundleID)"
        try Identifiers.validateStoreIdentifier(storeIdentifier)
        let app = App(
            bundleID: request.bundleID, teamID: request.teamID, keyValueStoreIdentifier: storeIdentifier, containers: [])
        try await server.store.createApp(app)
        return app
    }

    func createContainer(_ container: Container) async throws -> Container {
        try Identifiers.validateContainerID(container.identifier)
        try Identifiers.validateTeamID(container.teamID)
        if let extensions = container.packageExtensions { try Container.validate(packageExtensions: extensions) }
        try await server.store.createContainer(container)
        return container
    }

    func setPackageExtensions(_ request: PackageExtensionsRequest, of identifier: String) async throws -> Container {
        try Container.validate(packageExtensions: request.packageExtensions)
        guard try await server.store.setPackageExtensions(request.packageExtensions, of: identifier),
            let container = try await server.store.container(identifier: identifier)
        else { throw NimbusError.notFound("no container \(identifier)") }
        return container
    }

    func entitle(bundleID: String, container: String) async throws -> App {
        try await server.store.entitle(bundleID: bundleID, container: container)
        server.credentialCache.invalidateAll()
        return try await app(bundleID)
    }

    func revokeEntitlement(bundleID: String, container: String) async throws -> App {
        try await server.store.revokeEntitlement(bundleID: bundleID, container: container)
        server.credentialCache.invalidateAll()
        return try await app(bundleID)
    }

    func createAPIToken(_ request: CreateAPITokenRequest) async throws -> CreatedAPIToken {
        let app = try await app(request.bundleID)
        guard app.containers.contains(request.container) else {
            throw NimbusError.badRequest(
                "app \(app.bundleID) is not entitled to \(request.container); entitle it first with `nimbus admin entitle`")
        }
        let origins = request.allowedOrigins ?? []
        guard origins.count <= 50 else { throw NimbusError.badRequest("a token allows at most 50 origins") }
        for origin in origins { try APITokenRecord.validate(origin: origin) }
        let secret = Secrets.apiToken()
        let record = APITokenRecord(
            id: UUIDString.random(), tokenDigest: Secrets.digest(secret), containerID: request.container, bundleID: app.bundleID,
            name: request.name ?? app.bundleID, allowedOrigins: Array(Set(origins)).sorted())
        try await server.store.createAPIToken(record)
        return CreatedAPIToken(info: record.info, apiToken: secret)
    }

    func revokeAPIToken(id: String) async throws {
        try await server.store.revokeAPIToken(id: id)
        server.credentialCache.invalidateAll()
    }

    /// Registers a server-to-server key; its signed requests act as `creator` in the container's public database.
    func createServerKey(_ request: CreateServerKeyRequest, creator: AuthenticatedSession) async throws -> ServerKeyInfo {
        guard RequestSignature.isPublicKey(request.publicKey) else {
            throw NimbusError.badRequest(
                "publicKey must be an EC P-256 public key in PEM (openssl ecparam -name prime256v1 -genkey -noout -out key.pem; "
                    + "openssl ec -in key.pem -pubout)")
        }
        let record = ServerKeyRecord(
            id: Secrets.apiToken(), container: request.container, publicKeyPEM: request.publicKey,
            creatorAccountID: creator.accountID,
            name: request.name ?? "server key")
        try await server.store.createServerKey(record)
        return record.info
    }

    func revokeServerKey(id: String) async throws {
        try await server.store.revokeServerKey(id: id)
    }

    func users() async throws -> [UserInfo] {
        try await server.store.accounts().map {
            UserInfo(userRecordName: $0.id, email: $0.email, isAdministrator: $0.isAdministrator)
        }
    }

    private func app(_ bundleID: String) async throws -> App {
        guard let app = try await server.store.app(bundleID: bundleID) else {
            throw NimbusError.notFound("app \(bundleID) does not exist")
        }
        return app
    }

    private static func generatedTeamID() -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return String(Secrets.randomBytes(10).map { alphabet[Int($0) % alphabet.count] })
    }
}
