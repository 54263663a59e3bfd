import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

extension RecordService {
    /// How long an upload URL stays good, as CloudKit's.
    static let uploadLifetime: TimeInterval = 15 * 60
    /// How long after its upload URL expired a receipt can still be saved into a record.
    static let receiptLifetime: TimeInterval = 24 * 60 * 60

    /// `assets/upload`: an upload URL per asset field to fill.
    func requestUploads(_ database: RecordDatabase, _ request: AssetUploadRequest) async throws -> AssetUploadResponse {
        let caller = try database.requireCaller()
        guard (1...Self.maxOperations).contains(request.tokens.count) else {
            throw NimbusError.badRequest("tokens must hold 1 to \(Self.maxOperations) fields")
        }
        let (view, _) = try await target(request.zoneID, in: database)
        // Files are for records the caller may save: refuse uploads that could never be used.
        let access = RecordAccess(view)
        let schema = try await schemas.schema(view)
        var tokens = [AssetUploadResponse.Token]()
        for token in request.tokens {
            try Identifiers.validateSchemaName(token.recordType, what: "recordType")
            try Identifiers.validateSchemaName(token.fieldName, what: "fieldName")
            let type = schema.recordTypes.first { $0.name == token.recordType }
            guard access.allows(.create, type, creator: nil) || access.allows(.write, type, creator: caller.userRecordName) else {
                throw NimbusError.accessDenied(
                    "you may not save \(token.recordType) records here, so you may not upload their files")
            }
            let id = Secrets.apiToken()
            try await server.store.createAssetUpload(
                AssetUploadRecord(
                    id: id, owner: caller.userRecordName, container: database.container,
                    expiresAt: server.configuration.now().addingTimeInterval(Self.uploadLifetime)))
            tokens.append(
                .init(recordName: token.recordName, fieldName: token.fieldName, url: "\(database.baseURL)/assets/1/upload/\(id)"))
        }
        return AssetUploadResponse(tokens: tokens)
    }

    /// `assets/rereference`: a fresh receipt for each file of the named asset fields of records the caller
    /// can read, so that records elsewhere in the container can hold the same files (the files stay while
    /// any record holds them, as every asset file does).
    func rereferenceAssets(_ database: RecordDatabase, _ request: AssetRereferenceRequest) async throws
        -> AssetRereferenceResponse
    {
        let caller = try database.requireCaller()
        guard (1...Self.maxOperations).contains(request.assets.count) else {
            throw NimbusError.badRequest("assets must name 1 to \(Self.maxOperations) fields")
        }
        for item in request.assets {
            try Identifiers.validateRecordName(item.recordName)
            try Identifiers.validateSchemaName(item.fieldName, what: "fieldName")
        }
        let (view, zoneName) = try await target(request.zoneID, in: database)
        let entries = try await server.store.entries(view.zone(zoneName), keys: request.assets.map(\.recordName))
        let found = Dictionary(entries.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        let schema = try await schemas.schema(view)
        let access = RecordAccess(view)
        var answer = [AssetRereferenceResponse.Item]()
        for item in request.assets {
            func failure(_ error: NimbusError) -> AssetRereferenceResponse.Item {
                .failure(RecordError(recordName: item.recordName, error: error))
            }
            guard let entry = found[item.recordName], entry.payload != nil, access.shared?.sees(entry) ?? true else {
                answer.append(failure(.notFound("record \(item.recordName) does not exist")))
                continue
            }
            let record = try StoredRecord(entry: entry)
            guard
                access.allows(
                    .read, schema.recordTypes.first { $0.name == record.recordType }, creator: record.created.userRecordName)
            else {
                answer.append(failure(.accessDenied("you may not read \(record.recordType) records")))
                continue
            }
            guard let value = record.fields[item.fieldName], !StoredRecord.assets(value).isEmpty else {
                answer.append(failure(.badRequest("field \(item.fieldName) of record \(item.recordName) holds no asset")))
                continue
            }
            answer.append(
                .asset(
                    recordName: item.recordName, fieldName: item.fieldName,
                    value: try await withFreshReceipts(value, caller: caller.userRecordName, container: database.container)))
        }
        return AssetRereferenceResponse(assets: answer)
    }

    /// The value with each stored asset replaced by a receipt that brings the same file into a record.
    private func withFreshReceipts(_ value: FieldValue, caller: String, container: String) async throws -> FieldValue {
        switch value {
        case .asset(let asset):
            guard let id = asset.assetID, let size = asset.size, let checksum = asset.fileChecksum else { return value }
            let upload = Secrets.apiToken()
            let receipt = Secrets.sessionToken()
            try await server.store.createAssetUpload(
                AssetUploadRecord(
                    id: upload, owner: caller, container: container,
                    expiresAt: server.configuration.now().addingTimeInterval(Self.uploadLifetime)))
            try await server.store.completeAssetUpload(
                id: upload, blob: StoredBlob(id: id, size: size, checksum: checksum), receiptDigest: Secrets.digest(receipt))
            return .asset(AssetValue(fileChecksum: checksum, size: size, receipt: receipt))
        case .list(let values, let elementType):
            var renewed = [FieldValue]()
            for element in values { renewed.append(try await withFreshReceipts(element, caller: caller, container: container)) }
            return .list(renewed, elementType: elementType)
        default: return value
        }
    }

    /// Replaces receipts in the operations' asset fields with the uploaded files they stand for; returns
    /// the files so resolved (the writer accepts these, and files the records already hold).
    func redeemReceipts(_ operations: inout [PreparedOperation], _ database: RecordDatabase) async throws -> Set<String> {
        let caller = try database.requireCaller()
        var redeemed = Set<String>()
        for index in operations.indices {
            guard var fields = operations[index].record.fields else { continue }
            for (name, value) in fields {
                fields[name] = try await redeem(value, caller: caller.userRecordName, database: database, into: &redeemed)
            }
            operations[index].record.fields = fields
        }
        return redeemed
    }

    private func redeem(_ value: FieldValue, caller: String, database: RecordDatabase, into redeemed: inout Set<String>)
        async throws
        -> FieldValue
    {
        switch value {
        case .asset(let asset):
            guard let receipt = asset.receipt else { return .asset(AssetValue(assetID: asset.assetID)) }
            guard let upload = try await server.store.assetUpload(receiptDigest: Secrets.digest(receipt)), let blob = upload.blob,
                upload.owner == caller, upload.container == database.container,
                upload.expiresAt.addingTimeInterval(Self.receiptLifetime) > server.configuration.now()
            else {
                throw NimbusError.badRequest("an asset receipt is unknown, expired, or not yours; upload the file again")
            }
            redeemed.insert(blob.id)
            return .asset(AssetValue(fileChecksum: blob.checksum, size: blob.size, assetID: blob.id))
        case .list(let values, let elementType):
            var resolved = [FieldValue]()
            for value in values { resolved.append(try await redeem(value, caller: caller, database: database, into: &redeemed)) }
            return .list(resolved, elementType: elementType)
        default:
            return value
        }
    }
}

/// `POST /assets/1/upload/{id}` and `GET /assets/1/download/{assetID}`: the upload URLs `assets/upload`
/// hands out (the unguessable id is the credential, for 15 minutes) and signed download URLs.
struct AssetTransfers: Sendable {
    let server: ServerState

    /// Stores the body (or, for a `multipart/form-data` body, its file part) as the upload's file.
    func upload(id: String, body: RequestBody, contentType: String?) async throws -> AssetUploadResult {
        guard Secrets.isAPITokenShaped(id), let upload = try await server.store.assetUpload(id: id) else {
            throw NimbusError.notFound("no such upload; ask assets/upload for an upload URL")
        }
        guard upload.blob == nil else { throw NimbusError.badRequest("this upload URL was already used; ask for another") }
        guard upload.expiresAt > server.configuration.now() else {
            throw NimbusError.badRequest("this upload URL expired (they last 15 minutes); ask for another")
        }
        var writer = try await server.blobs.makeWriter(maxBytes: server.configuration.maxAssetBytes)
        let multipart = MultipartFile(contentType: contentType)
        var chunks = body.makeAsyncIterator()
        while true {
            // Only the body's own failures are the client's; the writer's (a full disk, say) are the server's,
            // and the writer has dropped its file by then.
            let chunk: ByteBuffer?
            do {
                chunk = try await chunks.next()
            } catch {
                await writer.discard()
                throw NimbusError.badRequest("the upload ended before it was complete")
            }
            guard let chunk else { break }
            do {
                guard let multipart else {
                    try await writer.write(Data(buffer: chunk))
                    continue
                }
                for event in try multipart.feed(chunk) {
                    switch event {
                    case .bytes(let bytes): try await writer.write(Data(buffer: bytes))
                    case .restart:
                        await writer.discard()
                        writer = try await server.blobs.makeWriter(maxBytes: server.configuration.maxAssetBytes)
                    }
                }
            } catch is BlobTooLarge {
                throw NimbusError(.requestTooLarge, "an asset holds at most \(server.configuration.maxAssetBytes) bytes")
            } catch {
                await writer.discard()
                throw error
            }
        }
        do {
            try multipart?.finish()
        } catch {
            await writer.discard()
            throw error
        }
        let blob = try await writer.finish()
        let receipt = Secrets.sessionToken()
        do {
            try await server.store.completeAssetUpload(id: id, blob: blob, receiptDigest: Secrets.digest(receipt))
        } catch StoreError.duplicate {
            throw NimbusError.badRequest("this upload URL was already used; ask for another")
        }
        return AssetUploadResult(singleFile: AssetValue(fileChecksum: blob.checksum, size: blob.size, receipt: receipt))
    }

    func download(assetID: String, expires: String?, signature: String?) async throws -> Response {
        guard let expires = expires.flatMap(Int64.init), let signature,
            Secrets.constantTimeEquals(
                signature, AssetLinks.signature(key: server.urlSigningKey, assetID: assetID, expires: expires))
        else {
            throw NimbusError.accessDenied("this download URL is not one the server signed")
        }
        guard expires > server.configuration.now().milliseconds else {
            throw NimbusError.accessDenied("this download URL expired; fetch the record again for a new one")
        }
        guard let size = try await server.blobs.size(assetID) else { throw NimbusError.notFound("the asset's file is gone") }
        return Response(
            status: .ok, headers: [.contentType: "application/octet-stream", .cacheControl: "private, max-age=3600"],
            body: try await server.blobs.responseBody(assetID, size: size))
    }
}
