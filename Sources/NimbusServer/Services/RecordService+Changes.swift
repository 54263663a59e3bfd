import NimbusCore
import NimbusStore

extension RecordService {
    /// `changes/zone`: each zone's records changed since its token, latest state only, deletions as
    /// `deleted: true`. A zone that fails (unknown, stale token) fails alone.
    func zoneChanges(_ database: RecordDatabase, _ request: ZoneChangesRequest) async throws -> JSONBody {
        try Self.requireChangeTracking(database)
        guard (1...Self.maxResults).contains(request.zones.count) else {
            throw NimbusError.badRequest("zones must name 1 to \(Self.maxResults) zones")
        }
        let numbersAsStrings = (request.numberAsStrings ?? request.numbersAsStrings) == true
        var json = JSONWriter(numbersAsStrings: numbersAsStrings)
        json.raw("{\"zones\":[")
        for (index, options) in request.zones.enumerated() {
            if index > 0 { json.raw(",") }
            let zoneID = options.zoneID ?? .defaultZone
            do {
                let page = try await changes(
                    database, zoneID: zoneID, syncToken: options.syncToken,
                    resultsLimit: options.resultsLimit ?? request.resultsLimit,
                    desiredKeys: options.desiredKeys ?? request.desiredKeys,
                    desiredRecordTypes: options.desiredRecordTypes ?? request.desiredRecordTypes,
                    numbersAsStrings: numbersAsStrings)
                json.raw("{\"zoneID\":")
                page.zoneID.write(to: &json)
                json.raw(",")
                try json.feed(page)
                json.raw("}")
            } catch let error as NimbusError where error.code != .accessDenied {
                try json.value(ZoneChanges(zoneID: zoneID, error: error))
            }
        }
        json.raw("]}")
        return json.body
    }

    /// `records/changes`: the older single-zone form.
    func recordChanges(_ database: RecordDatabase, _ request: RecordsChangesRequest) async throws -> JSONBody {
        try Self.requireChangeTracking(database)
        let page = try await changes(
            database, zoneID: request.zoneID, syncToken: request.syncToken, resultsLimit: request.resultsLimit,
            desiredKeys: request.desiredKeys, desiredRecordTypes: nil, numbersAsStrings: request.numbersAsStrings == true)
        var json = JSONWriter(numbersAsStrings: request.numbersAsStrings == true)
        json.raw("{")
        try json.feed(page)
        json.raw("}")
        return json.body
    }

    private func changes(
        _ database: RecordDatabase, zoneID: ZoneID, syncToken: String?, resultsLimit: Int?, desiredKeys: [String]?,
        desiredRecordTypes: [String]?, numbersAsStrings: Bool
    ) async throws -> ChangesPage {
        let limit = resultsLimit ?? Self.maxResults
        guard (1...Self.maxResults).contains(limit) else {
            throw NimbusError.badRequest("resultsLimit must be between 1 and \(Self.maxResults)")
        }
        let (database, name) = try await target(zoneID, in: database)
        let zone = database.zone(name)
        let state = try await server.store.zoneState(zone)
        if state == nil, name != RecordDatabase.defaultZoneName {
            throw NimbusError(.zoneNotFound, "zone \(name) does not exist")
        }
        let since = try syncToken.map { try database.changeToken($0).validated(against: state).sequence } ?? 0
        let page = try await server.store.changes(zone, after: since, limit: limit)
        let wireZoneID = database.zoneID(name)
        let links = links(database)
        var records = [OutgoingRecord]()
        for entry in page.entries {
            // In a shared hierarchy: records of the caller's shares, and as deleted those that left them.
            if let shared = database.shared {
                let membership = ShareMembership(audience: entry.audience)
                guard shared.reaches(membership) else { continue }
                if entry.payload != nil, shared.permission(covering: membership.current) == nil {
                    records.append(.wire(RecordWire(recordName: entry.key, zoneID: wireZoneID).deleted()))
                    continue
                }
            }
            guard entry.payload != nil else {
                records.append(.wire(RecordWire(recordName: entry.key, zoneID: wireZoneID).deleted()))
                continue
            }
            if let types = desiredRecordTypes, !types.contains(try StoredRecord(entry: entry).recordType) { continue }
            records.append(
                try OutgoingRecord.make(
                    entry, zoneID: wireZoneID, desiredKeys: desiredKeys, numbersAsStrings: numbersAsStrings, links: links))
        }
        return ChangesPage(
            zoneID: wireZoneID, records: try await withAcceptance(records, zone: zone), syncToken: database.syncToken(page.token),
            moreComing: page.moreComing)
    }
}

/// One page of a zone's changes as `changes/zone` and `records/changes` answer it.
struct ChangesPage {
    var zoneID: ZoneID
    var records: [OutgoingRecord]
    var syncToken: String
    var moreComing: Bool
}

extension JSONWriter {
    /// `"records":[…],"syncToken":…,"moreComing":…`, the keys both change feeds answer with.
    fileprivate mutating func feed(_ page: ChangesPage) throws {
        raw("\"records\":")
        try records(page.records)
        raw(",\"syncToken\":")
        string(page.syncToken)
        raw(",\"moreComing\":")
        bool(page.moreComing)
    }
}
