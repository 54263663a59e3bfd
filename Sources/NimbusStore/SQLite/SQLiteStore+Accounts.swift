import Foundation
import GRDB
import NimbusCore

extension SQLiteStore: AccountStore {
    package func createAccount(_ account: AccountRecord) async throws {
        try await write(duplicate: "account \(account.email)") { db in
            try db.cachedStatement(
                sql: "INSERT INTO accounts (id, email, password_hash, is_administrator, created_at) VALUES (?, ?, ?, ?, ?)"
            ).execute(arguments: [
                account.id, account.email, account.passwordHash, account.isAdministrator, account.createdAt.milliseconds,
            ])
        }
    }

    package func account(email: String) async throws -> AccountRecord? {
        try await read { db in
            try Row.fetchOne(try db.cachedStatement(sql: "SELECT * FROM accounts WHERE email = ?"), arguments: [email]).map(
                Self.account)
        }
    }

    package func account(id: String) async throws -> AccountRecord? {
        try await read { db in
            try Row.fetchOne(try db.cachedStatement(sql: "SELECT * FROM accounts WHERE id = ?"), arguments: [id]).map(
                Self.account)
        }
    }

    package func accounts() async throws -> [AccountRecord] {
        try await read { db in
            try Row.fetchAll(try db.cachedStatement(sql: "SELECT * FROM accounts ORDER BY email")).map(Self.account)
        }
    }

    package func administratorCount() async throws -> Int {
        try await read { db in
            try Int.fetchOne(try db.cachedStatement(sql: "SELECT count(*) FROM accounts WHERE is_administrator")) ?? 0
        }
    }

    package func updateProfile(accountID: String, _ profile: AccountProfile) async throws {
        try await write { db in
            try db.cachedStatement(
                sql: "UPDATE accounts SET first_name = ?, last_name = ?, phone_number = ?, discoverable = ? WHERE id = ?"
            ).execute(arguments: [profile.firstName, profile.lastName, profile.phoneNumber, profile.discoverable, accountID])
            guard db.changesCount == 1 else { throw StoreError.missing("account \(accountID)") }
        }
    }

    package func discoverableAccounts(emails: [String]?, phoneNumbers: [String]?, ids: [String]?, limit: Int) async throws
        -> [AccountRecord]
    {
        try await read { db in
            guard emails != nil || phoneNumbers != nil || ids != nil else {
                return try Row.fetchAll(
                    try db.cachedStatement(sql: "SELECT * FROM accounts WHERE discoverable ORDER BY id LIMIT ?"),
                    arguments: [limit]
                ).map(Self.account)
            }
            var found = [String: AccountRecord]()
            for (column, values) in [("email", emails ?? []), ("phone_number", phoneNumbers ?? []), ("id", ids ?? [])] {
                let statement = try db.cachedStatement(sql: "SELECT * FROM accounts WHERE \(column) = ? AND discoverable")
                for value in values {
                    for account in try Row.fetchAll(statement, arguments: [value]).map(Self.account) {
                        found[account.id] = account
                    }
                }
            }
            return found.values.sorted { $0.id < $1.id }.prefix(limit).map { $0 }
        }
    }

    package func saveDevice(_ device: DeviceRecord) async throws {
        try await write { db in
            let owner = try String.fetchOne(
                try db.cachedStatement(sql: "SELECT account_id FROM devices WHERE id = ?"), arguments: [device.id])
            if let owner, owner != device.accountID { throw StoreError.duplicate("device \(device.id)") }
            try db.cachedStatement(
                sql: """
                    INSERT INTO devices (id, account_id, name, last_seen_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET name = excluded.name, last_seen_at = excluded.last_seen_at
                    """
            ).execute(arguments: [device.id, device.accountID, device.name, device.lastSeenAt.milliseconds])
        }
    }

    package func device(id: String) async throws -> DeviceRecord? {
        try await read { db in
            try Row.fetchOne(try db.cachedStatement(sql: "SELECT * FROM devices WHERE id = ?"), arguments: [id]).map(Self.device)
        }
    }

    package func devices(accountID: String) async throws -> [DeviceRecord] {
        try await read { db in
            try Row.fetchAll(
                try db.cachedStatement(sql: "SELECT * FROM devices WHERE account_id = ? ORDER BY name, id"),
                arguments: [accountID]
            )
            .map(Self.device)
        }
    }

    package func markDeviceSeen(id: String, at date: Date) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE devices SET last_seen_at = ? WHERE id = ?").execute(arguments: [
                date.milliseconds, id,
            ])
        }
    }

    package func createSession(_ session: SessionRecord) async throws {
        try await write { db in
            try db.cachedStatement(
                sql: "INSERT INTO sessions (token_digest, account_id, device_id, expires_at, revoked) VALUES (?, ?, ?, ?, ?)"
            ).execute(arguments: [
                session.tokenDigest, session.accountID, session.deviceID, session.expiresAt.milliseconds, session.revoked,
            ])
        }
    }

    package func credentials(sessionDigest: String?, apiTokenDigest: String?) async throws -> StoredCredentials {
        try await read { db in
            let session = try sessionDigest.flatMap { digest in
                try Row.fetchOne(
                    try db.cachedStatement(sql: "SELECT * FROM sessions WHERE token_digest = ?"), arguments: [digest]
                ).map { row in
                    SessionRecord(
                        tokenDigest: row["token_digest"], accountID: row["account_id"], deviceID: row["device_id"],
                        expiresAt: Date(milliseconds: row["expires_at"]), revoked: row["revoked"])
                }
            }
            let token = try apiTokenDigest.flatMap { try Self.apiToken(digest: $0, db) }
            let app = try token.flatMap { try Self.app(bundleID: $0.bundleID, db) }
            return StoredCredentials(session: session, apiToken: token, app: app)
        }
    }

    package func revokeSession(tokenDigest: String) async throws {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE sessions SET revoked = 1 WHERE token_digest = ?").execute(arguments: [tokenDigest]
            )
        }
    }

    @discardableResult
    package func revokeSessions(deviceID: String) async throws -> Int {
        try await write { db in
            try db.cachedStatement(sql: "UPDATE sessions SET revoked = 1 WHERE device_id = ? AND revoked = 0").execute(
                arguments: [
                    deviceID
                ])
            return db.changesCount
        }
    }

    package func signedInDevices(accountID: String, at date: Date) async throws -> Set<String> {
        try await read { db in
            Set(
                try String.fetchAll(
                    try db.cachedStatement(
                        sql: "SELECT DISTINCT device_id FROM sessions WHERE account_id = ? AND revoked = 0 AND expires_at > ?"),
                    arguments: [accountID, date.milliseconds]))
        }
    }

    private static func account(_ row: Row) -> AccountRecord {
        AccountRecord(
            id: row["id"], email: row["email"], passwordHash: row["password_hash"],
            isAdministrator: row["is_administrator"], createdAt: Date(milliseconds: row["created_at"]),
            profile: AccountProfile(
                firstName: row["first_name"], lastName: row["last_name"], phoneNumber: row["phone_number"],
                discoverable: row["discoverable"]))
    }

    private static func device(_ row: Row) -> DeviceRecord {
        DeviceRecord(
            id: row["id"], accountID: row["account_id"], name: row["name"], lastSeenAt: Date(milliseconds: row["last_seen_at"]))
    }
}
