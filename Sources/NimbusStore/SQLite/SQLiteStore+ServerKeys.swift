import GRDB

extension SQLiteStore {
    package func createServerKey(_ key: ServerKeyRecord) async throws {
        try await write(duplicate: "server key \(key.id)") { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM containers WHERE identifier = ?", arguments: [key.container]) != nil
            else {
                throw StoreError.missing("container \(key.container)")
            }
            try db.execute(
                sql: """
                    INSERT INTO server_keys (id, container, public_key_pem, creator_account_id, name) VALUES (?, ?, ?, ?, ?)
                    """, arguments: [key.id, key.container, key.publicKeyPEM, key.creatorAccountID, key.name])
        }
    }

    package func serverKey(id: String) async throws -> ServerKeyRecord? {
        try await read { db in
            try Row.fetchOne(try db.cachedStatement(sql: "SELECT * FROM server_keys WHERE id = ?"), arguments: [id]).map(
                Self.serverKey)
        }
    }

    package func serverKeys() async throws -> [ServerKeyRecord] {
        try await read { db in try Row.fetchAll(db, sql: "SELECT * FROM server_keys ORDER BY container, name").map(Self.serverKey)
        }
    }

    package func revokeServerKey(id: String) async throws {
        try await write { db in
            try db.execute(sql: "UPDATE server_keys SET revoked = 1 WHERE id = ?", arguments: [id])
            guard db.changesCount == 1 else { throw StoreError.missing("server key \(id)") }
        }
    }

    private static func serverKey(_ row: Row) -> ServerKeyRecord {
        ServerKeyRecord(
            id: row["id"], container: row["container"], publicKeyPEM: row["public_key_pem"],
            creatorAccountID: row["creator_account_id"],
            name: row["name"], revoked: row["revoked"])
    }
}
