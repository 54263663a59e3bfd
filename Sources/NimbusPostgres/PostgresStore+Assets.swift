import Foundation
import NimbusCore
import NimbusStore
import PostgresNIO

extension PostgresStore: AssetStore {
    private static let uploadColumns = "id, owner, container, expires_at, blob_id, size, checksum, receipt_digest"

    package func createAssetUpload(_ upload: AssetUploadRecord) async throws {
        try await rows(
            """
            INSERT INTO asset_uploads (id, owner, container, expires_at)
            VALUES (\(upload.id), \(upload.owner), \(upload.container), \(upload.expiresAt.milliseconds))
            """)
    }

    package func assetUpload(id: String) async throws -> AssetUploadRecord? {
        try await rows("SELECT \(unescaped: Self.uploadColumns) FROM asset_uploads WHERE id = \(id)").first.map(Self.upload)
    }

    package func completeAssetUpload(id: String, blob: StoredBlob, receiptDigest: String) async throws {
        let updated = try await rows(
            """
            UPDATE asset_uploads SET blob_id = \(blob.id), size = \(blob.size), checksum = \(blob.checksum),
                receipt_digest = \(receiptDigest)
            WHERE id = \(id) AND blob_id IS NULL RETURNING 1
            """)
        guard updated.count == 1 else { throw StoreError.duplicate("upload \(id)") }
    }

    package func assetUpload(receiptDigest: String) async throws -> AssetUploadRecord? {
        try await rows("SELECT \(unescaped: Self.uploadColumns) FROM asset_uploads WHERE receipt_digest = \(receiptDigest)")
            .first.map(Self.upload)
    }

    package func uploadedBlobIDs(expiringAfter date: Date) async throws -> Set<String> {
        Set(
            try await rows(
                "SELECT blob_id FROM asset_uploads WHERE blob_id IS NOT NULL AND expires_at > \(date.milliseconds)"
            ).values(String.self))
    }

    package func deleteAssetUploads(expiredBefore date: Date) async throws {
        try await rows("DELETE FROM asset_uploads WHERE expires_at < \(date.milliseconds)")
    }

    private static func upload(_ row: PostgresRow) throws -> AssetUploadRecord {
        let (id, owner, container, expiresAt, blobID, size, checksum, receiptDigest) = try row.decode(
            (String, String, String, Int64, String?, Int64?, String?, String?).self)
        return AssetUploadRecord(
            id: id, owner: owner, container: container, expiresAt: Date(milliseconds: expiresAt),
            blob: blobID.map { StoredBlob(id: $0, size: size ?? 0, checksum: checksum ?? "") },
            receiptDigest: receiptDigest)
    }
}

extension PostgresStore: RoleStore {
    package func roleMembers(container: String, environment: String) async throws -> [RoleMember] {
        try await rows(
            """
            SELECT role, account_id FROM role_members WHERE container = \(container) AND environment = \(environment)
            ORDER BY role COLLATE "C", account_id COLLATE "C"
            """
        ).map { row in
            let (role, accountID) = try row.decode((String, String).self)
            return RoleMember(role: role, accountID: accountID)
        }
    }

    package func setRoleMember(_ membership: RoleMember, container: String, environment: String, member: Bool) async throws {
        if member {
            try await rows(
                """
                INSERT INTO role_members (container, environment, role, account_id)
                VALUES (\(container), \(environment), \(membership.role), \(membership.accountID)) ON CONFLICT DO NOTHING
                """)
        } else {
            try await rows(
                """
                DELETE FROM role_members WHERE container = \(container) AND environment = \(environment)
                    AND role = \(membership.role) AND account_id = \(membership.accountID)
                """)
        }
    }
}
