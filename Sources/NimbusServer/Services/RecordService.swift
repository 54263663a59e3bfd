import Foundation
import NimbusCore
import NimbusStore

/// The CloudKit-style record database: records, queries and change feeds of `/database/1/…`.
struct RecordService: Sendable {
    let server: ServerState
    var schemas: SchemaRegistry { server.schemas }

    static let maxOperations = 200
    static let maxResults = 200

    /// Checks the path against the caller's credentials: the API token must be for this container and
    /// its app entitled to it. The private database is the signed-in caller's own; the public database is
    /// the container's, readable without signing in.
    func authorize(
        _ context: DatabaseRequestContext, container: String, environment: String, database: String, apiToken: String? = nil
    ) async throws -> RecordDatabase {
        let caller: RecordDatabase.Caller?
        switch context.principal {
        case .app(let credential, let session):
            try credential.requireEntitlement(to: container)
            caller = session.map { RecordDatabase.Caller(userRecordName: $0.accountID, deviceID: $0.deviceID) }
        case .serverKey(let key):
            guard key.container == container else {
                throw NimbusError.accessDenied("the server-to-server key is for container \(key.container), not \(container)")
            }
            guard database == RecordDatabase.Scope.public.rawValue else {
                throw NimbusError.accessDenied("server-to-server keys reach the public database only")
            }
            caller = RecordDatabase.Caller(userRecordName: key.creatorAccountID, deviceID: "server-to-server")
        }
        guard let environment = RecordDatabase.Environment(rawValue: environment) else {
            throw NimbusError.badRequest("environment must be development or production, not \(environment)")
        }
        guard let scope = RecordDatabase.Scope(rawValue: database) else {
            throw NimbusError.badRequest("database must be private, public or shared, not \(database)")
        }
        let answer = { (owner: String) in
            var database = RecordDatabase(
                container: container, environment: environment, scope: scope, caller: caller, owner: owner)
            if let apiToken, Secrets.isAPITokenShaped(apiToken) { database.signInURL += "?ckAPIToken=" + apiToken }
            return database
        }
        switch scope {
        case .private, .shared: return answer(try answer("").requireCaller().userRecordName)
        case .public:
            // Custom security roles grant only in the public database.
            var database = answer(RecordDatabase.publicOwner)
            if let caller {
                database.roles =
                    try await server.roles.holders(container: container, environment: environment)[caller.userRecordName] ?? []
            }
            return database
        }
    }

    /// The zone a request names, and the database as it shows that zone: in the shared database, the
    /// owner's zone if it was shared with the caller (and they accepted); otherwise `zoneName(_:in:)`.
    func target(_ zoneID: ZoneID?, in database: RecordDatabase) async throws -> (database: RecordDatabase, name: String) {
        guard database.scope == .shared else { return (database, try zoneName(zoneID, in: database)) }
        let caller = try database.requireCaller()
        guard let zoneID, let owner = zoneID.ownerRecordName, zoneID.zoneName != RecordDatabase.defaultZoneName else {
            throw NimbusError(
                .zoneNotFound, "the shared database holds zones others shared with you: name the zone and its owner")
        }
        try Identifiers.validateZoneName(zoneID.zoneName)
        let zone = ZoneKey(
            accountID: owner,
            address: ZoneAddress(
                service: RecordDatabase.service(database.container, database.environment, .private), name: zoneID.zoneName))
        guard let scope = SharedScope(grants: try await server.store.grants(zone).filter { $0.grantee == caller.userRecordName })
        else {
            throw NimbusError(
                .zoneNotFound, "zone \(zoneID.zoneName) of \(owner) is not shared with you (or the share is not accepted)")
        }
        return (database.sharedView(owner: owner, scope: scope), zoneID.zoneName)
    }

    /// The zone a request names; another user's zone is refused, since a private database holds only its
    /// owner's zones, and the public database has only the default zone.
    func zoneName(_ zoneID: ZoneID?, in database: RecordDatabase) throws -> String {
        guard let zoneID else { return RecordDatabase.defaultZoneName }
        if let owner = zoneID.ownerRecordName, owner != database.owner, owner != RecordDatabase.publicOwnerRecordName {
            throw NimbusError.accessDenied(
                "zone \(zoneID.zoneName) belongs to another user; the private database holds only yours")
        }
        if database.scope == .public, zoneID.zoneName != RecordDatabase.defaultZoneName {
            throw NimbusError(.zoneNotFound, "the public database has only the default zone, not \(zoneID.zoneName)")
        }
        if zoneID.zoneName != RecordDatabase.defaultZoneName { try Identifiers.validateZoneName(zoneID.zoneName) }
        return zoneID.zoneName
    }

    func modify(_ database: RecordDatabase, _ request: RecordsModifyRequest) async throws -> JSONBody {
        guard (1...Self.maxOperations).contains(request.operations.count) else {
            throw NimbusError.badRequest("operations must hold 1 to \(Self.maxOperations) operations; split larger batches")
        }
        let (database, zoneName) = try await target(request.zoneID, in: database)
        let zone = database.zone(zoneName)
        let isDefaultZone = zoneName == RecordDatabase.defaultZoneName
        var operations = [PreparedOperation]()
        var names = Set<String>()
        for operation in request.operations {
            let name =
                operation.record.recordName
                ?? (operation.operationType == .create ? UUIDString.timeOrdered().uuidString.lowercased() : "")
            guard !name.isEmpty else {
                throw NimbusError.badRequest("\(operation.operationType.rawValue) needs the record's recordName")
            }
            try Identifiers.validateRecordName(name)
            if let type = operation.record.recordType, type != Self.shareType {
                try Identifiers.validateSchemaName(type, what: "recordType")
            }
            for field in Array(operation.record.fields?.keys ?? [:].keys) + (operation.record.clearedFields ?? []) {
                try Identifiers.validateSchemaName(field, what: "field name")
            }
            guard names.insert(name).inserted else {
                throw NimbusError.badRequest("record \(name) appears in more than one operation; send one operation per record")
            }
            operations.append(PreparedOperation(type: operation.operationType, name: name, record: operation.record))
        }
        let caller = try database.requireCaller()
        let redeemed = try await redeemReceipts(&operations, database)
        let shares = try await resolveShares(operations, database: database, zoneName: zoneName)
        // A caller who may not write here does not get to grow the schema either.
        let access = RecordAccess(database)
        let onlyDeletes = operations.allSatisfy { $0.type == .delete || $0.type == .forceDelete }
        if database.scope == .shared, !onlyDeletes, !access.allows(.write, nil, creator: nil) {
            throw NimbusError.accessDenied("this zone is shared with you read-only")
        }
        let cached = try await schemas.stored(container: database.container, environment: database.environment)
        let current = cached.schema
        let growing = try await typedFields(operations, zone: zone, shared: database.shared).filter { _, type, _ in
            let existing = current.recordTypes.first { $0.name == type }
            return access.allows(.create, existing, creator: nil)
                || access.allows(.write, existing, creator: caller.userRecordName)
        }
        let stamp = RecordWire.Stamp(
            timestamp: server.configuration.now().milliseconds, userRecordName: caller.userRecordName, deviceID: caller.deviceID)
        let writer = (
            schema: cached, growing: growing, stamp: stamp, zoneID: database.zoneID(zoneName), desiredKeys: request.desiredKeys,
            access: access,
            redeemed: redeemed, shares: shares
        )
        // The owner's quota covers all they store, in every service (as an iCloud plan does); the public
        // database's records are the container's.
        let quota = database.storageScope == .private ? Int(server.configuration.userQuotaBytes) : nil
        let atomic = !isDefaultZone && (request.atomic ?? true)
        let prepared = operations
        let results: [RecordResult]
        let changes: [RecordChange]
        let schema: Schema
        let schemaGrew: Bool
        do {
            ((results, changes, schema, schemaGrew), _) = try await server.store.transactRecords(zone, creating: isDefaultZone) {
                transaction in
                let growth = try SchemaGrowth(database, cached: writer.schema, records: writer.growing, in: transaction)
                let writer = RecordWriter(
                    transaction: transaction, schema: growth.schema, stamp: writer.stamp, zoneID: writer.zoneID,
                    desiredKeys: writer.desiredKeys, access: writer.access, redeemedAssets: writer.redeemed,
                    shares: writer.shares)
                let usedBefore = quota == nil ? 0 : try transaction.ownerBytes()
                // Share records go last, so a batch may save a hierarchy's root after the share naming it
                // (as CloudKit clients send `[share, root]`); answers stay in request order.
                var results = [RecordResult?](repeating: nil, count: prepared.count)
                let order =
                    prepared.indices.filter { prepared[$0].record.recordType != Self.shareType }
                    + prepared.indices.filter { prepared[$0].record.recordType == Self.shareType }
                for index in order {
                    let operation = prepared[index]
                    do {
                        results[index] = .record(try writer.apply(operation))
                    } catch let failure as OperationFailure {
                        let error = RecordError(
                            recordName: operation.name, error: failure.error, serverRecord: failure.serverRecord)
                        if atomic { throw AtomicBatchFailure(failed: index, error, operations: prepared) }
                        results[index] = .failure(error)
                    }
                }
                if let quota, !writer.log.changes.isEmpty {
                    // A batch that frees space (or keeps it) always goes through, so a full account can clean up.
                    let used = try transaction.ownerBytes()
                    guard used <= quota || used <= usedBefore else {
                        throw NimbusError(
                            .quotaExceeded,
                            "the owner's storage is full: this batch would hold \(used) bytes of \(quota); delete records, assets or documents"
                        )
                    }
                }
                let grew = try growth.commit(
                    saved: Set(
                        prepared.indices.filter { if case .record = results[$0] { true } else { false } }.map {
                            prepared[$0].name
                        }),
                    database, in: transaction)
                return (results.compactMap { $0 }, writer.log.changes, growth.schema, grew)
            }
        } catch let failure as AtomicBatchFailure {
            return JSONBody(
                bytes: try RecordsResponse(records: failure.answer.map(links(database).apply)).encoded(
                    numbersAsStrings: request.numbersAsStrings == true))
        } catch StoreError.missing {
            throw NimbusError(.zoneNotFound, "zone \(zoneName) does not exist; create it with zones/modify")
        }
        if schemaGrew { schemas.forget(container: database.container, environment: database.environment) }
        // From here on the write has committed: nothing may report it as failed.
        await announce(changes, in: database, zoneName: zoneName, schema: schema)
        var answer = results.map(links(database).apply)
        if !shares.isEmpty {
            do {
                answer = try await withAcceptance(answer, zone: zone)
            } catch {
                server.logger.error(
                    "could not read a share's acceptances for a committed answer", metadata: ["error": "\(error)"])
            }
        }
        return JSONBody(bytes: try RecordsResponse(records: answer).encoded(numbersAsStrings: request.numbersAsStrings == true))
    }

    /// Tells the devices that may see a commit's changes: the zone's owner and the participants whose
    /// shares the changes reach get a push, and the subscriptions they fire (the owner's private
    /// database's, whoever wrote; participants' shared database's) their notifications.
    ///
    /// It cannot fail the request: the write has committed, and a device that misses a push catches up
    /// from its change token. What goes wrong is logged.
    private func announce(_ changes: [RecordChange], in database: RecordDatabase, zoneName: String, schema: Schema) async {
        guard let last = changes.last else { return }
        let zone = database.zone(zoneName)
        let moved = PushMessage(type: .zoneMoved, zone: zone.address, sequence: last.sequence)
        server.push.publish(to: database.owner, moved)
        await notifySubscribers(database.ownerView, zoneName: zoneName, changes: changes, schema: schema)
        guard zoneName != RecordDatabase.defaultZoneName else { return }
        let grants: [ZoneGrant]
        do {
            grants = try await server.store.grants(zone)
        } catch {
            server.logger.error(
                "could not tell a shared zone's participants of a commit",
                metadata: ["zone": "\(zone.address)", "error": "\(error)"])
            return
        }
        var participants = [String: SharedScope]()
        for grantee in Set(grants.filter(\.accepted).map(\.grantee)) {
            guard let scope = SharedScope(grants: grants.filter { $0.grantee == grantee }),
                changes.contains(where: { scope.reaches($0.membership) })
            else { continue }
            server.push.publish(to: grantee, moved)
            participants[grantee] = scope
        }
        if !participants.isEmpty {
            await notifySubscribers(
                database.participantsView, zoneName: zoneName, changes: changes, schema: schema, participants: participants)
        }
    }

    /// The (type, fields) each operation saves, for extending a development schema before the write.
    /// Updates that do not name their type take it from the stored record.
    /// In a shared hierarchy, only records the caller can see lend their types.
    private func typedFields(_ operations: [PreparedOperation], zone: ZoneKey, shared: SharedScope?) async throws
        -> [SchemaGrowth.Record]
    {
        let untyped = operations.filter { $0.record.recordType == nil && !($0.record.fields ?? [:]).isEmpty }.map(\.name)
        var storedTypes = [String: String]()
        for entry in try await server.store.entries(zone, keys: untyped)
        where entry.payload != nil && shared?.sees(entry) ?? true {
            storedTypes[entry.key] = try StoredRecord(entry: entry).recordType
        }
        return operations.compactMap { operation in
            guard operation.type != .delete, operation.type != .forceDelete,
                let type = operation.record.recordType ?? storedTypes[operation.name], type != Self.shareType
            else { return nil }
            return (operation.name, type, operation.record.fields ?? [:])
        }
    }

    func lookup(_ database: RecordDatabase, _ request: RecordsLookupRequest) async throws -> JSONBody {
        guard (1...Self.maxResults).contains(request.records.count) else {
            throw NimbusError.badRequest("records must name 1 to \(Self.maxResults) records")
        }
        for item in request.records { try Identifiers.validateRecordName(item.recordName) }
        let (database, zoneName) = try await target(request.zoneID, in: database)
        let zone = database.zone(zoneName)
        let entries = try await server.store.entries(zone, keys: request.records.map(\.recordName))
        if entries.isEmpty, zoneName != RecordDatabase.defaultZoneName, try await server.store.zoneState(zone) == nil {
            throw NimbusError(.zoneNotFound, "zone \(zoneName) does not exist")
        }
        let found = Dictionary(entries.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        let schema = try await schemas.schema(database)
        let access = RecordAccess(database)
        let links = links(database)
        var answer = RecordsResponse(
            records: try request.records.map { item in
                // In a shared hierarchy, records outside the caller's shares do not exist for them.
                guard let entry = found[item.recordName], entry.payload != nil, access.shared?.sees(entry) ?? true else {
                    return .failure(
                        RecordError(recordName: item.recordName, error: .notFound("record \(item.recordName) does not exist")))
                }
                let record = try StoredRecord(entry: entry)
                let type = schema.recordTypes.first { $0.name == record.recordType }
                guard access.allows(.read, type, creator: record.created.userRecordName) else {
                    return .failure(
                        RecordError(
                            recordName: item.recordName, error: .accessDenied("you may not read \(record.recordType) records")))
                }
                return .record(
                    links.apply(
                        record.wire(
                            name: entry.key, sequence: entry.sequence, zoneID: database.zoneID(zoneName),
                            desiredKeys: item.desiredKeys ?? request.desiredKeys)))
            })
        answer.records = try await withAcceptance(answer.records, zone: zone)
        return JSONBody(bytes: try answer.encoded(numbersAsStrings: request.numbersAsStrings == true))
    }

    /// Download URLs for the assets of records answered to this request.
    func links(_ database: RecordDatabase) -> AssetLinks {
        AssetLinks(baseURL: database.baseURL, key: server.urlSigningKey, now: server.configuration.now())
    }
}

/// An atomic batch failed: the failing item keeps its error, every other item becomes `ATOMIC_ERROR`.
private struct AtomicBatchFailure: Error {
    var answer: [RecordResult]

    init(failed: Int, _ error: RecordError, operations: [PreparedOperation]) {
        answer = operations.enumerated().map { index, operation in
            if index == failed { return .failure(error) }
            return .failure(
                RecordError(
                    recordName: operation.name,
                    error: NimbusError(.atomicError, "not saved: another operation of this atomic batch failed")))
        }
    }
}
