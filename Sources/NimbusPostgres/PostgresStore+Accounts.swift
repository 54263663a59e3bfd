import Foundation
import NimbusCore
import NimbusStore
import PostgresNIO

extension PostgresStore: AccountStore {
    private static let accountColumns =
        "id, email, password_hash, is_administrator, created_at, first_name, last_name, phone_number, discoverable"

    package func createAccount(_ account: AccountRecord) async throws {
        do {
            try await rows(
                """
                INSERT INTO accounts (id, email, password_hash, is_administrator, created_at)
                VALUES (\(account.id), \(account.email), \(account.passwordHash), \(account.isAdministrator),
                    \(account.createdAt.milliseconds))
                """)
        } catch StoreError.duplicate {
            throw StoreError.duplicate("account \(account.email)")
        }
    }

    package func account(email: String) async throws -> AccountRecord? {
        try await rows(
            "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE lower(email COLLATE \"C\") = lower(\(email) COLLATE \"C\")"
        ).first.map(
            Self.account)
    }

    package func account(id: String) async throws -> AccountRecord? {
        try await rows("SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE id = \(id)").first.map(Self.account)
    }

    package func accounts() async throws -> [AccountRecord] {
        try await rows(
            "SELECT \(unescaped: Self.accountColumns) FROM accounts ORDER BY lower(email COLLATE \"C\"), email COLLATE \"C\""
        ).map(Self.account)
    }

    package func administratorCount() async throws -> Int {
        Int(try await rows("SELECT count(*) FROM accounts WHERE is_administrator").value(Int64.self) ?? 0)
    }

    package func updateProfile(accountID: String, _ profile: AccountProfile) async throws {
        let updated = try await rows(
            """
            UPDATE accounts SET first_name = \(profile.firstName), last_name = \(profile.lastName),
                phone_number = \(profile.phoneNumber), discoverable = \(profile.discoverable)
            WHERE id = \(accountID) RETURNING 1
            """)
        guard updated.count == 1 else { throw StoreError.missing("account \(accountID)") }
    }

    package func discoverableAccounts(emails: [String]?, phoneNumbers: [String]?, ids: [String]?, limit: Int) async throws
        -> [AccountRecord]
    {
        guard emails != nil || phoneNumbers != nil || ids != nil else {
            return try await rows(
                "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE discoverable ORDER BY id COLLATE \"C\" LIMIT \(Int64(limit))"
            ).map(Self.account)
        }
        return try await rows(
            """
            SELECT \(unescaped: Self.accountColumns) FROM accounts
            WHERE discoverable AND (lower(email COLLATE "C") IN (SELECT lower(e COLLATE "C") FROM unnest(\(emails ?? [])::text[]) e) OR phone_number = ANY(\(phoneNumbers ?? []))
                OR id = ANY(\(ids ?? [])))
            ORDER BY id COLLATE "C" LIMIT \(Int64(limit))
            """
        ).map(Self.account)
    }

    package func saveDevice(_ device: DeviceRecord) async throws {
        try await transaction { connection in
            let owner = try await connection.run(
                "SELECT account_id FROM devices WHERE id = \(device.id) FOR UPDATE"
            ).value(String.self)
            if let owner, owner != device.accountID { throw StoreError.duplicate("device \(device.id)") }
            try await connection.run(
                """
                INSERT INTO devices (id, account_id, name, last_seen_at)
                VALUES (\(device.id), \(device.accountID), \(device.name), \(device.lastSeenAt.milliseconds))
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, last_seen_at = excluded.last_seen_at
                """)
        }
    }

    package func device(id: String) async throws -> DeviceRecord? {
        try await rows("SELECT id, account_id, name, last_seen_at FROM devices WHERE id = \(id)").first.map(Self.device)
    }

    package func devices(accountID: String) async throws -> [DeviceRecord] {
        try await rows(
            "SELECT id, account_id, name, last_seen_at FROM devices WHERE account_id = \(accountID) ORDER BY name COLLATE \"C\", id COLLATE \"C\""
        ).map(Self.device)
    }

    package func markDeviceSeen(id: String, at date: Date) async throws {
        try await rows("UPDATE devices SET last_seen_at = \(date.milliseconds) WHERE id = \(id)")
    }

    package func createSession(_ session: SessionRecord) async throws {
        try await rows(
            """
            INSERT INTO sessions (token_digest, account_id, device_id, expires_at, revoked)
            VALUES (\(session.tokenDigest), \(session.accountID), \(session.deviceID), \(session.expiresAt.milliseconds),
                \(session.revoked))
            """)
    }

    package func revokeSession(tokenDigest: String) async throws {
        try await rows("UPDATE sessions SET revoked = true WHERE token_digest = \(tokenDigest)")
    }

    @discardableResult
    package func revokeSessions(deviceID: String) async throws -> Int {
        try await rows("UPDATE sessions SET revoked = true WHERE device_id = \(deviceID) AND NOT revoked RETURNING 1").count
    }

    package func signedInDevices(accountID: String, at date: Date) async throws -> Set<String> {
        var devices = Set<String>()
        for row in try await rows(
            "SELECT DISTINCT device_id FROM sessions WHERE account_id = \(accountID) AND NOT revoked AND expires_at > \(date.milliseconds)"
        ) {
            devices.insert(try row.makeRandomAccess()[0].decode(String.self))
        }
        return devices
    }

    package func credentials(sessionDigest: String?, apiTokenDigest: String?) async throws -> StoredCredentials {
        // One statement, one round trip: the session, and the token with its app and the app's containers.
        let row = try await rows(
            """
            SELECT s.token_digest, s.account_id, s.device_id, s.expires_at, s.revoked,
                t.id, t.token_digest, t.container, t.bundle_id, t.name, t.revoked,
                a.bundle_id, a.team_id, a.kv_store_identifier,
                (SELECT coalesce(array_agg(container ORDER BY container), '{}') FROM entitlements WHERE bundle_id = a.bundle_id),
                t.allowed_origins
            FROM (SELECT 1) one
            LEFT JOIN sessions s ON s.token_digest = \(sessionDigest)
            LEFT JOIN api_tokens t ON t.token_digest = \(apiTokenDigest)
            LEFT JOIN apps a ON a.bundle_id = t.bundle_id
            """
        ).first!.makeRandomAccess()
        let session: SessionRecord? =
            if let digest = try row[0].decode(String?.self) {
                SessionRecord(
                    tokenDigest: digest, accountID: try row[1].decode(String.self), deviceID: try row[2].decode(String.self),
                    expiresAt: Date(milliseconds: try row[3].decode(Int64.self)), revoked: try row[4].decode(Bool.self))
            } else { nil }
        let token: APITokenRecord? =
            if let id = try row[5].decode(String?.self) {
                APITokenRecord(
                    id: id, tokenDigest: try row[6].decode(String.self), containerID: try row[7].decode(String.self),
                    bundleID: try row[8].decode(String.self), name: try row[9].decode(String.self),
                    revoked: try row[10].decode(Bool.self),
                    allowedOrigins: APITokenRecord.origins(stored: try row[15].decode(String.self)))
            } else { nil }
        let app: App? =
            if let bundleID = try row[11].decode(String?.self) {
                App(
                    bundleID: bundleID, teamID: try row[12].decode(String.self),
                    keyValueStoreIdentifier: try row[13].decode(String.self), containers: try row[14].decode([String].self))
            } else { nil }
        return StoredCredentials(session: session, apiToken: token, app: app)
    }

    private static func account(_ row: PostgresRow) throws -> AccountRecord {
        let row = row.makeRandomAccess()
        return AccountRecord(
            id: try row[0].decode(String.self), email: try row[1].decode(String.self),
            passwordHash: try row[2].decode(String.self), isAdministrator: try row[3].decode(Bool.self),
            createdAt: Date(milliseconds: try row[4].decode(Int64.self)),
            profile: AccountProfile(
                firstName: try row[5].decode(String?.self), lastName: try row[6].decode(String?.self),
                phoneNumber: try row[7].decode(String?.self), discoverable: try row[8].decode(Bool.self)))
    }

    private static func device(_ row: PostgresRow) throws -> DeviceRecord {
        let (id, accountID, name, lastSeenAt) = try row.decode((String, String, String, Int64).self)
        return DeviceRecord(id: id, accountID: accountID, name: name, lastSeenAt: Date(milliseconds: lastSeenAt))
    }
}
