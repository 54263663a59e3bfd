import Foundation
import NimbusCore
import NimbusStore
import PostgresNIO

extension PostgresStore: DeveloperStore {
    package func createTeam(_ team: Team) async throws {
        try await inserting("team \(team.teamID)") {
            try await rows("INSERT INTO teams (team_id, name) VALUES (\(team.teamID), \(team.name))")
        }
    }

    package func teams() async throws -> [Team] {
        try await rows("SELECT team_id, name FROM teams ORDER BY team_id COLLATE \"C\"").map { row in
            let (teamID, name) = try row.decode((String, String).self)
            return Team(teamID: teamID, name: name)
        }
    }

    package func addTeamMember(teamID: String, accountID: String) async throws {
        try await transaction { connection in
            try await Self.require("team \(teamID)", "SELECT 1 FROM teams WHERE team_id = \(teamID)", connection)
            try await Self.require("account \(accountID)", "SELECT 1 FROM accounts WHERE id = \(accountID)", connection)
            try await connection.run(
                "INSERT INTO team_members (team_id, account_id) VALUES (\(teamID), \(accountID)) ON CONFLICT DO NOTHING")
        }
    }

    package func removeTeamMember(teamID: String, accountID: String) async throws {
        try await rows("DELETE FROM team_members WHERE team_id = \(teamID) AND account_id = \(accountID)")
    }

    package func teamIDs(memberAccountID: String) async throws -> [String] {
        try await rows("SELECT team_id FROM team_members WHERE account_id = \(memberAccountID) ORDER BY team_id COLLATE \"C\"")
            .map { try $0.decode(String.self) }
    }

    package func teamMembers(teamID: String) async throws -> [String] {
        try await rows("SELECT account_id FROM team_members WHERE team_id = \(teamID) ORDER BY account_id COLLATE \"C\"")
            .map { try $0.decode(String.self) }
    }

    package func createApp(_ app: App) async throws {
        try await transaction { connection in
            try await Self.require("team \(app.teamID)", "SELECT 1 FROM teams WHERE team_id = \(app.teamID)", connection)
            try await Self.inserting("app \(app.bundleID)") {
                try await connection.run(
                    """
                    INSERT INTO apps (bundle_id, team_id, kv_store_identifier)
                    VALUES (\(app.bundleID), \(app.teamID), \(app.keyValueStoreIdentifier))
                    """)
            }
        }
    }

    package func app(bundleID: String) async throws -> App? {
        try await apps(where: "WHERE a.bundle_id = \(bundleID)").first
    }

    package func apps() async throws -> [App] { try await apps(where: "") }

    private func apps(where condition: PostgresQuery) async throws -> [App] {
        var query: PostgresQuery = """
            SELECT a.bundle_id, a.team_id, a.kv_store_identifier,
                (SELECT coalesce(array_agg(container ORDER BY container COLLATE "C"), '{}') FROM entitlements WHERE bundle_id = a.bundle_id)
            FROM apps a
            """
        query.sql += " " + condition.sql + " ORDER BY a.bundle_id COLLATE \"C\""
        query.binds = condition.binds
        return try await rows(query).map { row in
            let (bundleID, teamID, keyValueStore, containers) = try row.decode((String, String, String, [String]).self)
            return App(bundleID: bundleID, teamID: teamID, keyValueStoreIdentifier: keyValueStore, containers: containers)
        }
    }

    package func createContainer(_ container: Container) async throws {
        let extensions = try container.packageExtensions.map(Self.json)
        try await transaction { connection in
            try await Self.require(
                "team \(container.teamID)", "SELECT 1 FROM teams WHERE team_id = \(container.teamID)", connection)
            try await Self.inserting("container \(container.identifier)") {
                try await connection.run(
                    """
                    INSERT INTO containers (identifier, team_id, package_extensions)
                    VALUES (\(container.identifier), \(container.teamID), \(extensions))
                    """)
            }
        }
    }

    package func setPackageExtensions(_ extensions: [String], of identifier: String) async throws -> Bool {
        try await rows(
            "UPDATE containers SET package_extensions = \(try Self.json(extensions)) WHERE identifier = \(identifier) RETURNING 1"
        ).count > 0
    }

    private static func json(_ extensions: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(extensions), as: UTF8.self)
    }

    package func container(identifier: String) async throws -> Container? {
        try await rows(
            "SELECT identifier, team_id, package_extensions FROM containers WHERE identifier = \(identifier)"
        ).first.map(Self.container)
    }

    package func containers() async throws -> [Container] {
        try await rows("SELECT identifier, team_id, package_extensions FROM containers ORDER BY identifier COLLATE \"C\"").map(
            Self.container)
    }

    package func entitle(bundleID: String, container: String) async throws {
        try await transaction { connection in
            try await Self.require("app \(bundleID)", "SELECT 1 FROM apps WHERE bundle_id = \(bundleID)", connection)
            try await Self.require(
                "container \(container)", "SELECT 1 FROM containers WHERE identifier = \(container)", connection)
            try await connection.run(
                "INSERT INTO entitlements (bundle_id, container) VALUES (\(bundleID), \(container)) ON CONFLICT DO NOTHING")
        }
    }

    package func revokeEntitlement(bundleID: String, container: String) async throws {
        let deleted = try await rows(
            "DELETE FROM entitlements WHERE bundle_id = \(bundleID) AND container = \(container) RETURNING 1")
        if deleted.isEmpty { throw StoreError.missing("entitlement of \(bundleID) to \(container)") }
    }

    package func createAPIToken(_ token: APITokenRecord) async throws {
        try await transaction { connection in
            try await Self.require("app \(token.bundleID)", "SELECT 1 FROM apps WHERE bundle_id = \(token.bundleID)", connection)
            try await Self.require(
                "container \(token.containerID)", "SELECT 1 FROM containers WHERE identifier = \(token.containerID)", connection)
            try await Self.inserting("API token") {
                try await connection.run(
                    """
                    INSERT INTO api_tokens (id, token_digest, container, bundle_id, name, revoked, allowed_origins)
                    VALUES (\(token.id), \(token.tokenDigest), \(token.containerID), \(token.bundleID), \(token.name), \(token.revoked),
                        \(token.storedOrigins))
                    """)
            }
        }
    }

    package func apiTokens() async throws -> [APITokenRecord] {
        try await rows(
            """
            SELECT id, token_digest, container, bundle_id, name, revoked, allowed_origins
            FROM api_tokens ORDER BY container COLLATE "C", name COLLATE "C"
            """
        ).map { row in
            let (id, digest, container, bundleID, name, revoked, origins) = try row.decode(
                (String, String, String, String, String, Bool, String).self)
            return APITokenRecord(
                id: id, tokenDigest: digest, containerID: container, bundleID: bundleID, name: name, revoked: revoked,
                allowedOrigins: APITokenRecord.origins(stored: origins))
        }
    }

    package func revokeAPIToken(id: String) async throws {
        let updated = try await rows("UPDATE api_tokens SET revoked = true WHERE id = \(id) RETURNING 1")
        if updated.isEmpty { throw StoreError.missing("API token \(id)") }
    }

    package func createServerKey(_ key: ServerKeyRecord) async throws {
        try await transaction { connection in
            try await Self.require(
                "container \(key.container)", "SELECT 1 FROM containers WHERE identifier = \(key.container)", connection)
            try await Self.inserting("server key \(key.id)") {
                try await connection.run(
                    """
                    INSERT INTO server_keys (id, container, public_key_pem, creator_account_id, name)
                    VALUES (\(key.id), \(key.container), \(key.publicKeyPEM), \(key.creatorAccountID), \(key.name))
                    """)
            }
        }
    }

    package func serverKey(id: String) async throws -> ServerKeyRecord? {
        try await rows(
            "SELECT id, container, public_key_pem, creator_account_id, name, revoked FROM server_keys WHERE id = \(id)"
        ).first.map(Self.serverKey)
    }

    package func serverKeys() async throws -> [ServerKeyRecord] {
        try await rows(
            """
            SELECT id, container, public_key_pem, creator_account_id, name, revoked FROM server_keys
            ORDER BY container COLLATE "C", name COLLATE "C"
            """
        ).map(Self.serverKey)
    }

    package func revokeServerKey(id: String) async throws {
        let updated = try await rows("UPDATE server_keys SET revoked = true WHERE id = \(id) RETURNING 1")
        guard updated.count == 1 else { throw StoreError.missing("server key \(id)") }
    }

    // MARK: Rows and checks

    /// Runs an insert, naming what already exists when a unique constraint refuses it.
    private func inserting(_ what: String, _ insert: () async throws -> Void) async throws {
        try await Self.inserting(what, insert)
    }

    private static func inserting(_ what: String, _ insert: () async throws -> Void) async throws {
        do {
            try await insert()
        } catch {
            if case StoreError.duplicate = storeError(error) { throw StoreError.duplicate(what) }
            throw error
        }
    }

    private static func require(_ what: String, _ query: PostgresQuery, _ connection: PostgresConnection) async throws {
        guard try await !connection.run(query).isEmpty else { throw StoreError.missing(what) }
    }

    private static func container(_ row: PostgresRow) throws -> Container {
        let (identifier, teamID, extensions) = try row.decode((String, String, String?).self)
        return Container(
            identifier: identifier, teamID: teamID,
            packageExtensions: extensions.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) })
    }

    private static func serverKey(_ row: PostgresRow) throws -> ServerKeyRecord {
        let (id, container, pem, creator, name, revoked) = try row.decode((String, String, String, String, String, Bool).self)
        return ServerKeyRecord(
            id: id, container: container, publicKeyPEM: pem, creatorAccountID: creator, name: name, revoked: revoked)
    }
}
