import NimbusCore
import NimbusStore

extension RecordService {
    /// Every zone of the database; the default zone always exists.
    func listZones(_ database: RecordDatabase) async throws -> ZonesResponse {
        if database.scope == .shared {
            return ZonesResponse(
                zones: try await sharedZones(database).map { zone, scope in
                    .zone(
                        ZoneWire(
                            zoneID: ZoneID(zoneName: zone.name, ownerRecordName: zone.owner),
                            syncToken: scope.token(zone.state.token), atomic: true))
                })
        }
        let zones = try await server.store.zones(accountID: database.owner, service: database.service)
        var answer = [ZoneResult]()
        if !zones.contains(where: { $0.name == RecordDatabase.defaultZoneName }) {
            answer.append(.zone(ZoneWire(zoneID: database.zoneID(RecordDatabase.defaultZoneName), atomic: false)))
        }
        answer += zones.map { .zone(wire($0.name, $0.state, database)) }
        return ZonesResponse(zones: answer)
    }

    func lookupZones(_ database: RecordDatabase, _ request: ZonesLookupRequest) async throws -> ZonesResponse {
        guard (1...Self.maxResults).contains(request.zones.count) else {
            throw NimbusError.badRequest("zones must name 1 to \(Self.maxResults) zones")
        }
        var answer = [ZoneResult]()
        for zone in request.zones {
            let view: RecordDatabase, name: String
            do {
                (view, name) = try await target(zone.zoneID, in: database)
            } catch let error as NimbusError where error.code == .zoneNotFound {
                answer.append(.failure(ZoneError(zoneID: zone.zoneID, error: error)))
                continue
            }
            if let state = try await server.store.zoneState(view.zone(name)) {
                answer.append(.zone(wire(name, state, view)))
            } else if name == RecordDatabase.defaultZoneName {
                answer.append(.zone(ZoneWire(zoneID: database.zoneID(name), atomic: false)))
            } else {
                answer.append(
                    .failure(ZoneError(zoneID: zone.zoneID, error: NimbusError(.zoneNotFound, "zone \(name) does not exist"))))
            }
        }
        return ZonesResponse(zones: answer)
    }

    /// Creates and deletes zones in order. Creating a zone that exists answers the zone, as saving one
    /// does natively; deleting a zone deletes its records.
    func modifyZones(_ database: RecordDatabase, _ request: ZonesModifyRequest) async throws -> ZonesResponse {
        guard database.scope == .private else {
            throw NimbusError.badRequest(
                "zones are created in the private database; the public database has only the default zone")
        }
        guard (1...Self.maxOperations).contains(request.operations.count) else {
            throw NimbusError.badRequest("operations must hold 1 to \(Self.maxOperations) operations")
        }
        let names = try request.operations.map { try zoneName($0.zone.zoneID, in: database) }
        guard Set(names).count == names.count else {
            throw NimbusError.badRequest("a zone appears in more than one operation; send one operation per zone")
        }
        var answer = [ZoneResult]()
        for (operation, name) in zip(request.operations, names) {
            let zone = database.zone(name)
            guard name != RecordDatabase.defaultZoneName else {
                answer.append(
                    .failure(
                        ZoneError(
                            zoneID: operation.zone.zoneID, error: .badRequest("the default zone cannot be created or deleted"))))
                continue
            }
            do {
                switch operation.operationType {
                case .create:
                    let state: ZoneState
                    do {
                        state = try await server.store.createZone(zone)
                    } catch StoreError.duplicate {
                        guard let existing = try await server.store.zoneState(zone) else { throw StoreError.missing(name) }
                        state = existing
                    }
                    answer.append(.zone(wire(name, state, database)))
                case .delete:
                    try await server.store.deleteZone(zone)
                    server.jobs.zoneDeleted()
                    answer.append(.zone(ZoneWire(zoneID: database.zoneID(name), deleted: true)))
                }
                server.push.publish(to: database.owner, PushMessage(type: .zoneMoved, zone: zone.address, sequence: 0))
            } catch StoreError.missing {
                answer.append(
                    .failure(
                        ZoneError(zoneID: operation.zone.zoneID, error: NimbusError(.zoneNotFound, "zone \(name) does not exist"))
                    ))
            }
        }
        return ZonesResponse(zones: answer)
    }

    /// Zones created, changed or deleted since a database token.
    func databaseChanges(_ database: RecordDatabase, _ request: DatabaseChangesRequest) async throws -> DatabaseChangesResponse {
        try Self.requireChangeTracking(database)
        if database.scope == .shared {
            // Every accepted shared zone, each time: a client compares the zones' own tokens, so listing a
            // zone that did not change costs it one empty zone fetch.
            let zones = try await sharedZones(database)
            return DatabaseChangesResponse(
                zones: zones.map { zone, scope in
                    ZoneWire(
                        zoneID: ZoneID(zoneName: zone.name, ownerRecordName: zone.owner), syncToken: scope.token(zone.state.token)
                    )
                },
                syncToken: DatabaseChangeToken(sequence: 0).encoded, moreComing: false)
        }
        let limit = request.resultsLimit ?? Self.maxResults
        guard (1...Self.maxResults).contains(limit) else {
            throw NimbusError.badRequest("resultsLimit must be between 1 and \(Self.maxResults)")
        }
        let since = try request.syncToken.map { try DatabaseChangeToken(encoded: $0) } ?? DatabaseChangeToken(sequence: 0)
        let page = try await server.store.zoneChanges(
            accountID: database.owner, service: database.service, after: since.sequence, limit: limit)
        guard since.sequence == 0 || page.history.holds(since.sequence, epoch: since.epoch, current: page.current) else {
            throw NimbusError(
                .changeTokenExpired, "syncToken does not belong to this database's history; fetch again without a token")
        }
        return DatabaseChangesResponse(
            zones: page.changes.map { ZoneWire(zoneID: database.zoneID($0.name), deleted: $0.deleted ? true : nil) },
            syncToken: DatabaseChangeToken(sequence: page.sequence, epoch: page.history.epoch).encoded,
            moreComing: page.moreComing)
    }

    /// Only private (and shared) databases track changes, as in CloudKit: the public one is queried.
    static func requireChangeTracking(_ database: RecordDatabase) throws {
        guard database.scope != .public else {
            throw NimbusError.badRequest("the public database has no change tracking; query it instead")
        }
    }

    private func wire(_ name: String, _ state: ZoneState, _ database: RecordDatabase) -> ZoneWire {
        ZoneWire(
            zoneID: database.zoneID(name), syncToken: database.syncToken(state.token),
            atomic: name != RecordDatabase.defaultZoneName)
    }
}
