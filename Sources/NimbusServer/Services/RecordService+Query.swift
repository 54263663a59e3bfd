import Foundation
import NimbusCore
import NimbusStore

extension RecordService {
    func query(_ database: RecordDatabase, _ request: RecordsQueryRequest) async throws -> JSONBody {
        var database = database
        let limit = request.resultsLimit ?? Self.maxResults
        guard (1...Self.maxResults).contains(limit) else {
            throw NimbusError.badRequest("resultsLimit must be between 1 and \(Self.maxResults)")
        }
        var zones: [ZoneKey]
        if request.zoneWide == true, request.zoneID == nil, database.scope != .shared {
            zones = try await server.store.zones(accountID: database.owner, service: database.service).map {
                database.zone($0.name)
            }
        } else {
            let (view, name) = try await target(request.zoneID, in: database)
            database = view
            zones = [database.zone(name)]
            if name != RecordDatabase.defaultZoneName, try await server.store.zoneState(zones[0]) == nil {
                throw NimbusError(.zoneNotFound, "zone \(name) does not exist")
            }
        }
        let schema = try await schemas.schema(database)
        guard let recordType = schema.recordTypes.first(where: { $0.name == request.query.recordType }) else {
            throw NimbusError.badRequest("record type \(request.query.recordType) is not in this environment's schema")
        }
        let planner = QueryPlanner(recordType: recordType)
        var conditions = [IndexCondition]()
        switch RecordAccess(database).readScope(recordType) {
        case .all: break
        case .ownRecords:
            conditions.append(
                IndexCondition(field: RecordIndexer.createdByField, .equal(.text(try database.requireCaller().userRecordName))))
        case .none:
            _ = try database.requireCaller()
            throw NimbusError.accessDenied("you may not read \(recordType.name) records")
        }
        if let shares = RecordAccess(database).hierarchies {
            conditions.append(IndexCondition(field: RecordIndexer.shareField, .oneOf(shares.keys.sorted().map { .text($0) })))
        }
        let plan = try planner.plan(filters: request.query.filterBy ?? [], sorts: request.query.sortBy ?? [])
        conditions += plan.conditions
        let after = try request.continuationMarker.map(Self.position(marker:))

        let matches: [QueryMatch]
        do {
            matches = try await server.store.query(
                IndexQuery(
                    zones: zones, kind: recordType.name, conditions: conditions, sort: plan.sort, after: after, limit: limit + 1))
        } catch StoreError.foreignPosition {
            throw Self.foreignMarker
        }
        let links = links(database)
        let records = try matches.prefix(limit).map { match in
            try OutgoingRecord.make(
                match.entry, zoneID: database.zoneID(match.zone.name), desiredKeys: request.desiredKeys,
                numbersAsStrings: request.numbersAsStrings == true, links: links)
        }
        var json = JSONWriter(numbersAsStrings: request.numbersAsStrings == true)
        json.raw("{\"records\":")
        try json.records(records)
        if matches.count > limit {
            json.raw(",\"continuationMarker\":")
            json.string(try Self.marker(matches[limit - 1].position))
        }
        json.raw("}")
        return json.body
    }

    /// Continuation markers are positions in the query's order, as CloudKit's cursors are: the last
    /// record's values of the order's keys, so resending the query with one continues right after it,
    /// reading only what follows (never skipping or repeating records saved or deleted meanwhile).
    static func marker(_ position: QueryPosition) throws -> String {
        Base64.encode(Array("q2.".utf8) + (try JSONEncoder().encode(position)), .standard)
    }

    static func position(marker: String) throws(NimbusError) -> QueryPosition {
        guard marker.utf8.count <= maxMarkerBytes, let bytes = Base64.decode(marker), bytes.starts(with: "q2.".utf8),
            let position = try? JSONDecoder().decode(QueryPosition.self, from: Data(bytes.dropFirst(3)))
        else { throw foreignMarker }
        return position
    }

    /// Markers hold the last record's sort values, which may be long text; a bound keeps a forged one cheap.
    static let maxMarkerBytes = 256 * 1024

    static let foreignMarker = NimbusError.badRequest("continuationMarker is not one this server issued for this query")
}
