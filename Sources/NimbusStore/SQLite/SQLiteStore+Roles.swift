import GRDB

extension SQLiteStore: RoleStore {
    package func roleMembers(container: String, environment: String) async throws -> [RoleMember] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT role, account_id FROM role_members WHERE container = ? AND environment = ? ORDER BY role, account_id",
                arguments: [container, environment]
            ).map { RoleMember(role: $0["role"], accountID: $0["account_id"]) }
        }
    }

    package func setRoleMember(_ membership: RoleMember, container: String, environment: String, member: Bool) async throws {
        try await write { db in
            let arguments: StatementArguments = [container, environment, membership.role, membership.accountID]
            if member {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO role_members (container, environment, role, account_id) VALUES (?, ?, ?, ?)",
                    arguments: arguments)
            } else {
                try db.execute(
                    sql: "DELETE FROM role_members WHERE container = ? AND environment = ? AND role = ? AND account_id = ?",
                    arguments: arguments)
            }
        }
    }
}
