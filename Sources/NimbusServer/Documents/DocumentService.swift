import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// iCloud document storage for one user and container: items with stable IDs, immutable versions made
/// of content-addressed chunks, conflict versions kept beside the current one, history and Recently
/// Deleted. A container environment's documents are one zone of the substrate (`DocumentKeys`).
struct DocumentService: Sendable {
    let server: ServerState

    static let zoneName = "documents"
    static let maxOperationsPerBatch = 400
    static let maxChangesPerPage = 1000
    /// The largest chunk accepted (ContentDefinedChunker's largest is 4 MiB).
    static let maxChunkBytes: Int64 = 8 << 20
    static let maxHashesPerQuestion = 10_000

    /// The calling app must be entitled to the container; the zone is the signed-in user's.
    func authorize(_ context: ServiceRequestContext, container: String, environment: String) throws -> ZoneKey {
        try context.appCredential.requireEntitlement(to: container)
        guard ["development", "production"].contains(environment) else {
            throw NimbusError.badRequest("environment must be development or production, not \(environment)")
        }
        return ZoneKey(
            accountID: context.session.accountID,
            address: ZoneAddress(service: .documents(container: container, environment: environment), name: Self.zoneName))
    }

    func changes(_ zone: ZoneKey, _ request: DocumentChangesRequest) async throws -> DocumentChangesResponse {
        let page = try await server.store.changes(
            zone, since: request.syncToken, resultsLimit: request.resultsLimit, maxPerPage: Self.maxChangesPerPage)
        var items: [DocumentItem] = []
        var removed: [String] = []
        let decoder = JSONDecoder()
        for entry in page.entries where entry.key.hasPrefix(DocumentKeys.itemPrefix) {
            if let payload = entry.payload {
                items.append(try decoder.decode(DocumentItem.self, from: payload))
            } else {
                removed.append(String(entry.key.dropFirst(DocumentKeys.itemPrefix.count)))
            }
        }
        var container: Container?
        if let identifier = zone.address.service.container {
            container = try await server.store.container(identifier: identifier)
        }
        return DocumentChangesResponse(
            items: items, removed: removed, syncToken: page.token.encoded, moreComing: page.moreComing,
            packageExtensions: container?.effectivePackageExtensions ?? Container.defaultPackageExtensions)
    }

    /// Applies a batch, as the device `deviceID` unless the request names another of the caller's.
    /// `holding` (hash → size) are chunks the caller has just stored in the blob store: recorded as theirs
    /// in the batch's own transaction, one synced commit for both (WebDAV's uploads). They are retained like
    /// every chunk the batch names: a sweep that listed an older copy of one before it was written again
    /// decides under its lock, and only a retain taken under that lock tells it the chunk is wanted.
    /// `precondition` runs first in the batch's transaction; when it throws, nothing is applied (WebDAV's locks).
    func modify(
        _ zone: ZoneKey, _ request: DocumentModifyRequest, deviceID: String, holding: [String: Int64] = [:],
        precondition: (@Sendable (any ZoneTransaction) throws -> Void)? = nil
    ) async throws -> DocumentModifyResponse {
        guard !request.operations.isEmpty else { throw NimbusError.badRequest("operations must not be empty") }
        guard request.operations.count <= Self.maxOperationsPerBatch else {
            throw NimbusError.badRequest("a batch holds at most \(Self.maxOperationsPerBatch) operations; split it")
        }
        // The collector spares a chunk written or retained within its grace period: a collection whose
        // scan ran before this commit cannot delete what the commit names.
        let named = Set(request.operations.flatMap { $0.content?.chunks.map(\.hash) ?? [] })
        let missing = named.subtracting(try await server.blobs.retain(Array(named)))
        let device = String((request.device ?? deviceID).prefix(200))
        let now = server.configuration.now().milliseconds
        let quota = Int(server.configuration.userQuotaBytes)
        let operations = request.operations
        let (results, state) = try await server.store.transact(zone, creating: true) { transaction in
            try precondition?(transaction)
            let writer = DocumentWriter(transaction: transaction, device: device, now: now)
            let usedBefore = try transaction.ownerBytes()
            for (hash, size) in holding.sorted(by: { $0.key < $1.key }) where try ChunkHolding.read(hash, in: transaction) == nil
            {
                try ChunkHolding(size: size, uploadedAt: now, named: false).write(hash, in: transaction)
            }
            let results = operations.map { operation in
                do {
                    // One malformed operation fails alone: a device's batch carries its other changes on.
                    try Self.validate(operation)
                    if let chunk = operation.content?.chunks.first(where: { missing.contains($0.hash) }) {
                        throw NimbusError(.chunkMissing, "chunk \(chunk.hash) was not uploaded; upload it, then save again")
                    }
                    return try writer.apply(operation)
                } catch let error as NimbusError {
                    return DocumentResult(
                        itemID: operation.itemID, outcome: .failed, serverErrorCode: error.code, reason: error.reason)
                } catch {
                    return DocumentResult(
                        itemID: operation.itemID, outcome: .failed, serverErrorCode: .internalError,
                        reason: "the operation could not be applied")
                }
            }
            // A batch that frees space (or keeps it) always goes through, so a full account can clean up.
            let used = try transaction.ownerBytes()
            guard used <= quota || used <= usedBefore else {
                throw NimbusError(
                    .quotaExceeded,
                    "the owner's storage is full: this batch would hold \(used) bytes of \(quota); delete documents, records or assets"
                )
            }
            return results
        }
        server.push.publish(to: zone.accountID, PushMessage(type: .zoneMoved, zone: zone.address, sequence: state.sequence))
        return DocumentModifyResponse(results: results, syncToken: state.token.encoded)
    }

    func versions(_ zone: ZoneKey, _ request: DocumentVersionsRequest) async throws -> DocumentVersionsResponse {
        try DocumentKeys.validateItemID(request.itemID)
        let decoder = JSONDecoder()
        guard let payload = try await server.store.entries(zone, keys: [DocumentKeys.item(request.itemID)]).first?.payload
        else { throw NimbusError.notFound("no item \(request.itemID)") }
        let item = try decoder.decode(DocumentItem.self, from: payload)
        let matches = try await server.store.query(
            IndexQuery(
                zones: [zone], kind: DocumentKeys.versionKind,
                conditions: [IndexCondition(field: "item", .equal(.text(request.itemID)))], limit: DocumentNames.maxEntries))
        let history = try matches.compactMap { match in
            try match.entry.payload.map { try decoder.decode(DocumentVersion.self, from: $0) }
        }
        return DocumentVersionsResponse(item: item, history: history.sorted { $0.savedAt > $1.savedAt })
    }

    func trash(_ zone: ZoneKey) async throws -> DocumentTrashResponse {
        let matches = try await server.store.query(
            IndexQuery(
                zones: [zone], kind: DocumentKeys.itemKind, conditions: [IndexCondition(field: "trash", .equal(.text("1")))],
                limit: DocumentNames.maxEntries))
        let decoder = JSONDecoder()
        let items = try matches.compactMap { match in
            try match.entry.payload.map { try decoder.decode(DocumentItem.self, from: $0) }
        }
        return DocumentTrashResponse(items: items.sorted { ($0.deletedAt ?? 0) > ($1.deletedAt ?? 0) })
    }

    /// Refuses malformed operations before anything is read.
    static func validate(_ operation: DocumentOperation) throws(NimbusError) {
        try DocumentKeys.validateItemID(operation.itemID)
        if let parent = operation.parentID { try DocumentKeys.validateItemID(parent) }
        if let name = operation.name { try DocumentNames.validate(name) }
        if let base = operation.baseContentHash, !DocumentNames.isHash(base) {
            throw .badRequest("baseContentHash must be a SHA-256 in lowercase hexadecimal")
        }
        guard operation.operationType == .save else { return }
        guard let kind = operation.kind else { throw .badRequest("a save names the item's kind") }
        guard operation.name != nil else { throw .badRequest("a save names the item") }
        switch (kind, operation.content) {
        case (.folder, .some): throw .badRequest("a folder has no content")
        case (.file, .none), (.package, .none): throw .badRequest("saving a \(kind.rawValue) needs its content")
        default: break
        }
        guard let content = operation.content else { return }
        guard DocumentNames.isHash(content.contentHash), content.chunks.allSatisfy({ DocumentNames.isHash($0.hash) }) else {
            throw .badRequest("contentHash and chunk hashes are SHA-256s in lowercase hexadecimal")
        }
        guard content.chunks.count <= DocumentNames.maxChunks,
            content.chunks.allSatisfy({ (1...maxChunkBytes).contains($0.size) }),
            content.size == content.chunks.reduce(0, { $0 + $1.size }), content.size <= DocumentNames.maxFileBytes
        else {
            throw .badRequest(
                "a version holds at most \(DocumentNames.maxChunks) chunks of 1 to \(maxChunkBytes) bytes, and its size is theirs (at most \(DocumentNames.maxFileBytes) bytes)"
            )
        }
    }
}
