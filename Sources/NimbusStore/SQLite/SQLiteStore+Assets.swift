import Foundation
import GRDB

extension SQLiteStore: AssetStore {
    package func createAssetUpload(_ upload: AssetUploadRecord) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO asset_uploads (id, owner, container, expires_at) VALUES (?, ?, ?, ?)",
                arguments: [upload.id, upload.owner, upload.container, upload.expiresAt.milliseconds])
        }
    }

    package func assetUpload(id: String) async throws -> AssetUploadRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM asset_uploads WHERE id = ?", arguments: [id]).map(Self.upload)
        }
    }

    package func completeAssetUpload(id: String, blob: StoredBlob, receiptDigest: String) async throws {
        try await write { db in
            try db.execute(
                sql:
                    "UPDATE asset_uploads SET blob_id = ?, size = ?, checksum = ?, receipt_digest = ? WHERE id = ? AND blob_id IS NULL",
                arguments: [blob.id, blob.size, blob.checksum, receiptDigest, id])
            guard db.changesCount == 1 else { throw StoreError.duplicate("upload \(id)") }
        }
    }

    package func assetUpload(receiptDigest: String) async throws -> AssetUploadRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM asset_uploads WHERE receipt_digest = ?", arguments: [receiptDigest]).map(
                Self.upload)
        }
    }

    package func uploadedBlobIDs(expiringAfter date: Date) async throws -> Set<String> {
        try await read { db in
            Set(
                try String.fetchAll(
                    db, sql: "SELECT blob_id FROM asset_uploads WHERE blob_id IS NOT NULL AND expires_at > ?",
                    arguments: [date.milliseconds]))
        }
    }

    package func deleteAssetUploads(expiredBefore date: Date) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM asset_uploads WHERE expires_at < ?", arguments: [date.milliseconds])
        }
    }

    private static func upload(_ row: Row) -> AssetUploadRecord {
        let blob = (row["blob_id"] as String?).map { StoredBlob(id: $0, size: row["size"], checksum: row["checksum"]) }
        return AssetUploadRecord(
            id: row["id"], owner: row["owner"], container: row["container"], expiresAt: Date(milliseconds: row["expires_at"]),
            blob: blob,
            receiptDigest: row["receipt_digest"])
    }
}
