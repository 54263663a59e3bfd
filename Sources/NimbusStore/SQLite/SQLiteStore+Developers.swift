import Foundation
import GRDB
import NimbusCore

extension SQLiteStore: DeveloperStore {
    package func createTeam(_ team: Team) async throws {
        try await write(duplicate: "team \(team.teamID)") { db in
            try db.cachedStatement(sql: "INSERT INTO teams (team_id, name) VALUES (?, ?)").execute(arguments: [
                team.teamID, team.name,
            ])
        }
    }

    package func teams() async throws -> [Team] {
        try await read { db in
            try Row.fetchAll(try db.cachedStatement(sql: "SELECT * FROM teams ORDER BY team_id")).map {
                Team(teamID: $0["team_id"], name: $0["name"])
            }
        }
    }

    package func addTeamMember(teamID: String, accountID: String) async throws {
        try await write { db in
            try Self.requireTeam(teamID, db)
            guard
                try Bool.fetchOne(try db.cachedStatement(sql: "SELECT 1 FROM accounts WHERE id = ?"), arguments: [accountID])
                    != nil
            else { throw StoreError.missing("account \(accountID)") }
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO team_members (team_id, account_id) VALUES (?, ?)").execute(
                arguments: [teamID, accountID])
        }
    }

    package func removeTeamMember(teamID: String, accountID: String) async throws {
        try await write { db in
            try db.cachedStatement(sql: "DELETE FROM team_members WHERE team_id = ? AND account_id = ?").execute(arguments: [
                teamID, accountID,
            ])
        }
    }

    package func teamIDs(memberAccountID: String) async throws -> [String] {
        try await read { db in
            try String.fetchAll(
                try db.cachedStatement(sql: "SELECT team_id FROM team_members WHERE account_id = ? ORDER BY team_id"),
                arguments: [memberAccountID])
        }
    }

    package func teamMembers(teamID: String) async throws -> [String] {
        try await read { db in
            try String.fetchAll(
                try db.cachedStatement(sql: "SELECT account_id FROM team_members WHERE team_id = ? ORDER BY account_id"),
                arguments: [teamID])
        }
    }

    package func createApp(_ app: App) async throws {
        try await write(duplicate: "app \(app.bundleID)") { db in
            try Self.requireTeam(app.teamID, db)
            try db.cachedStatement(sql: "INSERT INTO apps (bundle_id, team_id, kv_store_identifier) VALUES (?, ?, ?)").execute(
                arguments: [app.bundleID, app.teamID, app.keyValueStoreIdentifier])
        }
    }

    package func app(bundleID: String) async throws -> App? {
        try await read { db in try Self.app(bundleID: bundleID, db) }
    }

    package func apps() async throws -> [App] {
        try await read { db in
            try Row.fetchAll(try db.cachedStatement(sql: "SELECT * FROM apps ORDER BY bundle_id")).map { try Self.app($0, db) }
        }
    }

    package func createContainer(_ container: Container) async throws {
        try await write(duplicate: "container \(container.identifier)") { db in
            try Self.requireTeam(container.teamID, db)
            try db.cachedStatement(sql: "INSERT INTO containers (identifier, team_id, package_extensions) VALUES (?, ?, ?)")
                .execute(arguments: [container.identifier, container.teamID, try container.packageExtensions.map(Self.json)])
        }
    }

    package func setPackageExtensions(_ extensions: [String], of identifier: String) async throws -> Bool {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE containers SET package_extensions = ? WHERE identifier = ?").execute(
                arguments: [try Self.json(extensions), identifier])
            return db.changesCount > 0
        }
    }

    private static func json(_ extensions: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(extensions), as: UTF8.self)
    }

    package func container(identifier: String) async throws -> Container? {
        try await read { db in
            try Row.fetchOne(
                try db.cachedStatement(sql: "SELECT * FROM containers WHERE identifier = ?"), arguments: [identifier]
            ).map(Self.container)
        }
    }

    package func containers() async throws -> [Container] {
        try await read { db in
            try Row.fetchAll(try db.cachedStatement(sql: "SELECT * FROM containers ORDER BY identifier")).map(Self.container)
        }
    }

    package func entitle(bundleID: String, container: String) async throws {
        try await write { db in
            try Self.requireApp(bundleID, db)
            try Self.requireContainer(container, db)
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO entitlements (bundle_id, container) VALUES (?, ?)").execute(
                arguments: [bundleID, container])
        }
    }

    package func revokeEntitlement(bundleID: String, container: String) async throws {
        try await write { db in
            try db.cachedStatement(sql: "DELETE FROM entitlements WHERE bundle_id = ? AND container = ?").execute(arguments: [
                bundleID, container,
            ])
            if db.changesCount == 0 { throw StoreError.missing("entitlement of \(bundleID) to \(container)") }
        }
    }

    package func createAPIToken(_ token: APITokenRecord) async throws {
        try await write(duplicate: "API token") { db in
            try Self.requireApp(token.bundleID, db)
            try Self.requireContainer(token.containerID, db)
            try db.cachedStatement(
                sql: """
                    INSERT INTO api_tokens (id, token_digest, container, bundle_id, name, revoked, allowed_origins)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                token.id, token.tokenDigest, token.containerID, token.bundleID, token.name, token.revoked, token.storedOrigins,
            ])
        }
    }

    package func apiTokens() async throws -> [APITokenRecord] {
        try await read { db in
            try Row.fetchAll(try db.cachedStatement(sql: "SELECT * FROM api_tokens ORDER BY container, name")).map(Self.apiToken)
        }
    }

    package func revokeAPIToken(id: String) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE api_tokens SET revoked = 1 WHERE id = ?").execute(arguments: [id])
            if db.changesCount == 0 { throw StoreError.missing("API token \(id)") }
        }
    }

    private static func requireTeam(_ teamID: String, _ db: Database) throws {
        guard try Bool.fetchOne(try db.cachedStatement(sql: "SELECT 1 FROM teams WHERE team_id = ?"), arguments: [teamID]) != nil
        else {
            throw StoreError.missing("team \(teamID)")
        }
    }

    private static func requireApp(_ bundleID: String, _ db: Database) throws {
        guard
            try Bool.fetchOne(try db.cachedStatement(sql: "SELECT 1 FROM apps WHERE bundle_id = ?"), arguments: [bundleID]) != nil
        else {
            throw StoreError.missing("app \(bundleID)")
        }
    }

    private static func requireContainer(_ identifier: String, _ db: Database) throws {
        guard
            try Bool.fetchOne(
                try db.cachedStatement(sql: "SELECT 1 FROM containers WHERE identifier = ?"), arguments: [identifier]) != nil
        else {
            throw StoreError.missing("container \(identifier)")
        }
    }

    static func app(bundleID: String, _ db: Database) throws -> App? {
        try Row.fetchOne(try db.cachedStatement(sql: "SELECT * FROM apps WHERE bundle_id = ?"), arguments: [bundleID]).map {
            try app($0, db)
        }
    }

    static func apiToken(digest: String, _ db: Database) throws -> APITokenRecord? {
        try Row.fetchOne(try db.cachedStatement(sql: "SELECT * FROM api_tokens WHERE token_digest = ?"), arguments: [digest]).map(
            apiToken)
    }

    private static func app(_ row: Row, _ db: Database) throws -> App {
        let bundleID: String = row["bundle_id"]
        let containers = try String.fetchAll(
            try db.cachedStatement(sql: "SELECT container FROM entitlements WHERE bundle_id = ? ORDER BY container"),
            arguments: [bundleID])
        return App(
            bundleID: bundleID, teamID: row["team_id"], keyValueStoreIdentifier: row["kv_store_identifier"],
            containers: containers)
    }

    private static func container(_ row: Row) -> Container {
        Container(
            identifier: row["identifier"], teamID: row["team_id"],
            packageExtensions: (row["package_extensions"] as String?).flatMap {
                try? JSONDecoder().decode([String].self, from: Data($0.utf8))
            })
    }

    private static func apiToken(_ row: Row) -> APITokenRecord {
        APITokenRecord(
            id: row["id"], tokenDigest: row["token_digest"], containerID: row["container"], bundleID: row["bundle_id"],
            name: row["name"], revoked: row["revoked"], allowedOrigins: APITokenRecord.origins(stored: row["allowed_origins"]))
    }
}
