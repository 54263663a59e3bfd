import Foundation
import NIOHTTP1
import NimbusCore

/// One database of a container (CloudKit's `CKDatabase`): records, queries, zones and change feeds.
public struct CloudDatabase: Sendable {
    public enum Scope: String, Sendable { case `private`, `public`, shared }

    /// How a save treats the server's copy (CloudKit's `CKModifyRecordsOperation.RecordSavePolicy`).
    public enum SavePolicy: Sendable {
        /// Save only if the server's record is the one fetched (its change tag); conflicts otherwise.
        case ifServerRecordUnchanged
        /// Overwrite the keys changed locally, whatever the server holds; keep the others.
        case changedKeys
        /// Overwrite every key with the local values.
        case allKeys
    }

    public let container: CloudContainer
    public let scope: Scope

    func path(_ operation: String) -> String {
        "/database/1/\(container.identifier)/\(container.environment.rawValue)/\(scope.rawValue)/\(operation)"
    }

    private func post<Body: Encodable, Answer: Decodable>(_ operation: String, _ body: Body) async throws -> Answer {
        try await container.client.send(.POST, path(operation), body: body)
    }

    // MARK: Records

    /// Saves one record; a new record is created, a fetched one updated if the server still has that version.
    public func save(_ record: Record) async throws -> Record {
        let (saved, _) = try await modifyRecords(saving: [record], deleting: [])
        return try saved[record.recordID]!.get()
    }

    public func record(for recordID: RecordID, desiredKeys: [String]? = nil) async throws -> Record {
        try await records(for: [recordID], desiredKeys: desiredKeys)[recordID]!.get()
    }

    /// Fetches records by ID (all of one zone per request, as the wire protocol addresses zones).
    public func records(for recordIDs: [RecordID], desiredKeys: [String]? = nil) async throws -> [RecordID: Result<
        Record, any Error
    >] {
        var results = [RecordID: Result<Record, any Error>]()
        for (zoneID, ids) in Dictionary(grouping: recordIDs, by: \.zoneID) {
            for chunk in ids.chunked(RecordLimits.maxOperations) {
                let answer: RecordsResponse = try await post(
                    "records/lookup",
                    RecordsLookupRequest(
                        records: chunk.map { .init(recordName: $0.recordName) }, zoneID: zoneID.wire, desiredKeys: desiredKeys))
                try Self.requireOneItemEach(answer, chunk.count)
                for (id, item) in zip(chunk, answer.records) {
                    results[id] = Result { try Self.record(item, zoneID: zoneID) }
                }
            }
        }
        return results
    }

    @discardableResult
    public func deleteRecord(withID recordID: RecordID) async throws -> RecordID {
        let (_, deleted) = try await modifyRecords(saving: [], deleting: [recordID])
        try deleted[recordID]!.get()
        return recordID
    }

    /// Saves and deletes records, grouped per zone; in custom zones `atomically` makes each zone's batch
    /// all-or-nothing. A conflict under `ifServerRecordUnchanged` is a `RecordConflictError`.
    public func modifyRecords(
        saving: [Record], deleting: [RecordID], savePolicy: SavePolicy = .ifServerRecordUnchanged, atomically: Bool = true
    ) async throws -> (saveResults: [RecordID: Result<Record, any Error>], deleteResults: [RecordID: Result<Void, any Error>]) {
        var saveResults = [RecordID: Result<Record, any Error>]()
        var deleteResults = [RecordID: Result<Void, any Error>]()
        let saving = try await uploadAssets(saving)
        let zones = Set(saving.map(\.recordID.zoneID) + deleting.map(\.zoneID))
        for zoneID in zones.sorted(by: { $0.zoneName < $1.zoneName }) {
            let items: [(Record?, RecordID)] =
                saving.filter { $0.recordID.zoneID == zoneID }.map { ($0, $0.recordID) }
                + deleting.filter { $0.zoneID == zoneID }.map { (nil, $0) }
            for chunk in items.chunked(RecordLimits.maxOperations) {
                let operations = chunk.map { record, id in
                    record.map { Self.operation(saving: $0, policy: savePolicy) }
                        ?? RecordOperation(.forceDelete, RecordWire(recordName: id.recordName))
                }
                let request = RecordsModifyRequest(operations: operations, zoneID: zoneID.wire, atomic: atomically)
                let answer = try await container.client.send(
                    .POST, path("records/modify"), body: try request.encoded(), decode: RecordsResponse.decode)
                try Self.requireOneItemEach(answer, chunk.count)
                for ((record, id), item) in zip(chunk, answer.records) {
                    if let record {
                        saveResults[id] = Result { try Self.saved(item, from: record, zoneID: zoneID) }
                    } else {
                        deleteResults[id] = Result {
                            if case .failure(let failure) = item { throw Self.error(failure) }
                        }
                    }
                }
            }
        }
        return (saveResults, deleteResults)
    }

    /// Answers are positional: one item per record asked for, so every result above is filled in.
    private static func requireOneItemEach(_ answer: RecordsResponse, _ count: Int) throws {
        guard answer.records.count == count else {
            throw NimbusError(.internalError, "the server answered \(answer.records.count) items for \(count) records")
        }
    }

    /// Uploads the local files set as assets and puts their receipts in the records.
    private func uploadAssets(_ records: [Record]) async throws -> [Record] {
        var records = records
        for index in records.indices where !records[index].pendingUploads.isEmpty {
            let record = records[index]
            let fields = record.pendingUploads.keys.sorted()
            let tokens: AssetUploadResponse = try await post(
                "assets/upload",
                AssetUploadRequest(
                    tokens: fields.map {
                        .init(recordName: record.recordID.recordName, recordType: record.recordType, fieldName: $0)
                    },
                    zoneID: record.recordID.zoneID.wire))
            for (field, token) in zip(fields, tokens.tokens) {
                let file = record.pendingUploads[field]!
                let bytes: Data
                do {
                    bytes = try Data(contentsOf: file)
                } catch {
                    throw NimbusError.badRequest("cannot read the asset file \(file.path): \(error.localizedDescription)")
                }
                let answer = try await container.client.transfer(.POST, url: token.url, body: bytes)
                let uploaded = try JSONDecoder().decode(AssetUploadResult.self, from: answer)
                records[index].setUploaded(field, uploaded.singleFile)
            }
        }
        return records
    }

    /// An asset's bytes, from the download URL of a fetched record (good for an hour after the fetch).
    public func download(_ asset: Asset) async throws -> Data {
        guard let url = asset.value.downloadURL else {
            if let file = asset.fileURL { return try Data(contentsOf: file) }
            throw NimbusError.badRequest("this asset has no download URL; fetch its record first")
        }
        return try await container.client.transfer(.GET, url: url, body: nil)
    }

    /// Downloads an asset into a file (replacing it), as CloudKit leaves fetched assets in local files.
    public func download(_ asset: Asset, to file: URL) async throws {
        try await download(asset).write(to: file, options: .atomic)
    }

    private static func operation(saving record: Record, policy: SavePolicy) -> RecordOperation {
        switch policy {
        case .ifServerRecordUnchanged:
            record.recordChangeTag == nil
                ? RecordOperation(.create, record.wire(onlyChangedKeys: false))
                : RecordOperation(.update, record.wire(onlyChangedKeys: true))
        case .changedKeys: RecordOperation(.forceUpdate, record.wire(onlyChangedKeys: record.recordChangeTag != nil))
        case .allKeys: RecordOperation(.forceUpdate, record.wire(onlyChangedKeys: false))
        }
    }

    private static func saved(_ item: RecordResult, from record: Record, zoneID: RecordZoneID) throws -> Record {
        switch item {
        case .record(let wire): return try Record(wire: wire, zoneID: zoneID)
        case .failure(let failure):
            if failure.serverErrorCode == .conflict, let server = failure.serverRecord {
                throw RecordConflictError(
                    serverRecord: try Record(wire: server, zoneID: zoneID), clientRecord: record, ancestorRecord: record.ancestor,
                    underlying: error(failure))
            }
            throw error(failure)
        }
    }

    private static func record(_ item: RecordResult, zoneID: RecordZoneID) throws -> Record {
        switch item {
        case .record(let wire): try Record(wire: wire, zoneID: zoneID)
        case .failure(let failure): throw error(failure)
        }
    }

    static func error(_ failure: RecordError) -> NimbusError {
        NimbusError(failure.serverErrorCode, failure.reason, retryAfter: failure.retryAfter, uuid: failure.uuid)
    }

    // MARK: Queries

    /// The first page of a query's results, and a cursor when more match.
    public func records(
        matching query: Query, inZoneWith zoneID: RecordZoneID? = nil, desiredKeys: [String]? = nil, resultsLimit: Int? = nil
    ) async throws -> (matchResults: [Record], cursor: QueryCursor?) {
        try await page(query, zoneID: zoneID, desiredKeys: desiredKeys, resultsLimit: resultsLimit, marker: nil)
    }

    public func records(continuingMatchFrom cursor: QueryCursor) async throws -> (matchResults: [Record], cursor: QueryCursor?) {
        try await page(
            cursor.query, zoneID: cursor.zoneID, desiredKeys: cursor.desiredKeys, resultsLimit: cursor.resultsLimit,
            marker: cursor.marker)
    }

    /// Every record a query matches, page after page.
    public func allRecords(matching query: Query, inZoneWith zoneID: RecordZoneID? = nil) async throws -> [Record] {
        var (found, cursor) = try await records(matching: query, inZoneWith: zoneID)
        while let next = cursor {
            let page = try await records(continuingMatchFrom: next)
            found += page.matchResults
            cursor = page.cursor
        }
        return found
    }

    private func page(_ query: Query, zoneID: RecordZoneID?, desiredKeys: [String]?, resultsLimit: Int?, marker: String?)
        async throws
        -> (matchResults: [Record], cursor: QueryCursor?)
    {
        let request = RecordsQueryRequest(
            query: query.wire, zoneID: (zoneID ?? .default).wire, resultsLimit: resultsLimit, continuationMarker: marker,
            desiredKeys: desiredKeys)
        let answer = try await container.client.send(
            .POST, path("records/query"), body: try JSONEncoder().encode(request), decode: RecordsQueryResponse.decode)
        let records = try answer.records.map { try Self.record($0, zoneID: zoneID ?? .default) }
        let cursor = answer.continuationMarker.map {
            QueryCursor(query: query, zoneID: zoneID, desiredKeys: desiredKeys, resultsLimit: resultsLimit, marker: $0)
        }
        return (records, cursor)
    }

    // MARK: Zones

    public func save(_ zone: RecordZone) async throws -> RecordZone {
        try await modifyZones(saving: [zone], deleting: [])
        return zone
    }

    public func deleteRecordZone(withID zoneID: RecordZoneID) async throws {
        try await modifyZones(saving: [], deleting: [zoneID])
    }

    private func modifyZones(saving: [RecordZone], deleting: [RecordZoneID]) async throws {
        let operations =
            saving.map { ZonesModifyRequest.Operation(.create, ZoneWire(zoneID: $0.zoneID.wire)) }
            + deleting.map { ZonesModifyRequest.Operation(.delete, ZoneWire(zoneID: $0.wire)) }
        let answer: ZonesResponse = try await post("zones/modify", ZonesModifyRequest(operations: operations))
        for case .failure(let failure) in answer.zones {
            throw NimbusError(failure.serverErrorCode, failure.reason, uuid: failure.uuid)
        }
    }

    public func allRecordZones() async throws -> [RecordZone] {
        let answer: ZonesResponse = try await container.client.send(.GET, path("zones/list"))
        return answer.zones.compactMap {
            if case .zone(let zone) = $0 { RecordZone(zoneID: RecordZoneID(zone.zoneID)) } else { nil }
        }
    }

    // MARK: Subscriptions

    /// Creates or replaces a subscription; its notifications arrive on `CloudContainer.notifications()`.
    @discardableResult
    public func save(_ subscription: Subscription) async throws -> Subscription {
        let existing = try await allSubscriptions().contains { $0.subscriptionID == subscription.subscriptionID }
        let answer: SubscriptionsResponse = try await post(
            "subscriptions/modify", SubscriptionsModifyRequest(operations: [.init(existing ? .update : .create, subscription)]))
        return try Self.subscription(answer)
    }

    public func allSubscriptions() async throws -> [Subscription] {
        let answer: SubscriptionsResponse = try await container.client.send(.GET, path("subscriptions/list"))
        return answer.subscriptions.compactMap { if case .subscription(let subscription) = $0 { subscription } else { nil } }
    }

    public func deleteSubscription(withID id: String) async throws {
        let answer: SubscriptionsResponse = try await post(
            "subscriptions/modify",
            SubscriptionsModifyRequest(operations: [.init(.delete, Subscription(subscriptionID: id, subscriptionType: .database))]
            ))
        _ = try Self.subscription(answer)
    }

    private static func subscription(_ answer: SubscriptionsResponse) throws -> Subscription {
        switch answer.subscriptions.first {
        case .subscription(let subscription): return subscription
        case .failure(let failure): throw NimbusError(failure.serverErrorCode, failure.reason, uuid: failure.uuid)
        case nil: throw NimbusError(.internalError, "the server answered no subscription")
        }
    }

    // MARK: Change feeds

    /// Zones changed and deleted since a token (nil: since the beginning). Call again while `moreComing`.
    public func databaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        let answer: DatabaseChangesResponse = try await post("changes/database", DatabaseChangesRequest(syncToken: token?.value))
        return DatabaseChanges(
            modifiedZoneIDs: answer.zones.filter { $0.deleted != true }.map { RecordZoneID($0.zoneID) },
            deletedZoneIDs: answer.zones.filter { $0.deleted == true }.map { RecordZoneID($0.zoneID) },
            changeToken: ServerChangeToken(value: answer.syncToken), moreComing: answer.moreComing)
    }

    /// Records changed and deleted in a zone since a token (nil: since the beginning), latest state only.
    public func recordZoneChanges(inZoneWith zoneID: RecordZoneID, since token: ServerChangeToken?, resultsLimit: Int? = nil)
        async throws
        -> RecordZoneChanges
    {
        let request = ZoneChangesRequest(zones: [
            ZoneChangesOptions(zoneID: zoneID.wire, syncToken: token?.value, resultsLimit: resultsLimit)
        ])
        let answer = try await container.client.send(
            .POST, path("changes/zone"), body: try JSONEncoder().encode(request), decode: ZoneChangesResponse.decode)
        guard let zone = answer.zones.first else { throw NimbusError(.internalError, "the server answered no zone") }
        if let code = zone.serverErrorCode { throw NimbusError(code, zone.reason ?? code.rawValue) }
        var changes = RecordZoneChanges(
            changeToken: ServerChangeToken(value: zone.syncToken ?? ""), moreComing: zone.moreComing ?? false)
        for record in zone.records ?? [] {
            if record.deleted == true, let name = record.recordName {
                changes.deletions.append(RecordID(recordName: name, zoneID: zoneID))
            } else {
                changes.modifications.append(try Record(wire: record, zoneID: zoneID))
            }
        }
        return changes
    }
}

/// An opaque position in a change feed; apps store it (it is Codable) and send it back.
public struct ServerChangeToken: Hashable, Sendable, Codable {
    public let value: String
}

public struct DatabaseChanges: Sendable {
    public var modifiedZoneIDs: [RecordZoneID]
    public var deletedZoneIDs: [RecordZoneID]
    public var changeToken: ServerChangeToken
    public var moreComing: Bool
}

public struct RecordZoneChanges: Sendable {
    public var modifications: [Record] = []
    public var deletions: [RecordID] = []
    public var changeToken: ServerChangeToken
    public var moreComing: Bool
}

/// CloudKit Web Services' per-request limits, which the SDK splits batches by.
enum RecordLimits {
    static let maxOperations = 200
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
