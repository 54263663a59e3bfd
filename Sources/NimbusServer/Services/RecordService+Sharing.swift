import Foundation
import NimbusCore
import NimbusStore

extension RecordService {
    /// The record type of share records, as CloudKit names it.
    static let shareType = "cloudkit.share"
    /// The record name of a zone's share.
    static let zoneShareName = "cloudkit.zoneshare"
    static let maxParticipants = 100

    /// Share records a batch saves, resolved to accounts: a zone of the owner's private database (a share
    /// named `cloudkit.zoneshare`), or the hierarchy under a record of it (any other share, `forRecord`
    /// naming the root), is shared with each participant, read-only or read-write, once they accept.
    func resolveShares(_ operations: [PreparedOperation], database: RecordDatabase, zoneName: String) async throws -> [String:
        StoredShare]
    {
        var shares = [String: StoredShare]()
        for operation in operations where operation.record.recordType == Self.shareType {
            guard database.scope == .private, zoneName != RecordDatabase.defaultZoneName else {
                throw NimbusError.badRequest(
                    "share a custom zone of your private database, or records in one (the default zone cannot be shared)")
            }
            guard (operation.record.publicPermission ?? "NONE") == "NONE" else {
                throw NimbusError.badRequest("publicPermission must be NONE: shares go to named participants")
            }
            var participants = [StoredShare.Participant]()
            guard (operation.record.participants ?? []).count <= Self.maxParticipants else {
                throw NimbusError.badRequest("a share has at most \(Self.maxParticipants) participants, as CloudKit's")
            }
            for participant in operation.record.participants ?? [] where participant.type != "OWNER" {
                let account: AccountRecord?
                if let name = participant.userIdentity.userRecordName {
                    account = try await server.store.account(id: name)
                } else if let email = participant.userIdentity.lookupInfo?.emailAddress {
                    account = try await server.store.account(email: email)
                } else {
                    throw NimbusError.badRequest("a participant needs userIdentity.userRecordName or lookupInfo.emailAddress")
                }
                guard let account else {
                    throw NimbusError.badRequest("a participant has no Nimbus account; they must sign up first")
                }
                guard account.id != database.owner, !participants.contains(where: { $0.userRecordName == account.id }) else {
                    continue
                }
                let permission: ZoneGrant.Permission
                switch participant.permission {
                case "READ_ONLY": permission = .read
                case "READ_WRITE": permission = .readWrite
                default:
                    throw NimbusError.badRequest(
                        "a participant's permission is READ_ONLY or READ_WRITE, not \(participant.permission)")
                }
                participants.append(.init(userRecordName: account.id, emailAddress: account.email, permission: permission))
            }
            shares[operation.name] = StoredShare(
                participants: participants,
                shortGUID: Self.shortGUID(owner: database.owner, zone: zoneName, share: operation.name))
        }
        return shares
    }

    /// Share records with each participant's acceptance, which the zone's grants of that share keep (the
    /// stored share says only who was invited). Reads the grants only when there is a share record.
    func withAcceptance(_ results: [RecordResult], zone: ZoneKey) async throws -> [RecordResult] {
        guard results.contains(where: { $0.record?.participants != nil }) else { return results }
        let grants = try await server.store.grants(zone).filter(\.accepted)
        return results.map { result in
            guard case .record(var record) = result else { return result }
            record.markAcceptance(grants)
            return .record(record)
        }
    }

    /// The same for the records of a change feed.
    func withAcceptance(_ records: [OutgoingRecord], zone: ZoneKey) async throws -> [OutgoingRecord] {
        guard records.contains(where: { if case .wire(let record) = $0 { record.participants != nil } else { false } }) else {
            return records
        }
        let grants = try await server.store.grants(zone).filter(\.accepted)
        return records.map { item in
            guard case .wire(var record) = item else { return item }
            record.markAcceptance(grants)
            return .wire(record)
        }
    }

    /// A share's address, what a participant accepts: it names the owner, the zone and the share record.
    static func shortGUID(owner: String, zone: String, share: String) -> String {
        Base64.encode((share == zoneShareName ? "z1/\(owner)/\(zone)" : "h1/\(owner)/\(zone)/\(share)").utf8, .url)
    }

    static func share(shortGUID: String) -> (owner: String, zone: String, share: String)? {
        guard shortGUID.utf8.count <= 1024, let bytes = Base64.decode(shortGUID) else { return nil }
        // Account ids and zone names hold no "/"; a share's record name may, so it comes last.
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
            .map(String.init)
        switch (parts.first, parts.count) {
        case ("z1", 3): return (parts[1], parts[2], zoneShareName)
        case ("h1", 4): return (parts[1], parts[2], parts[3])
        default: return nil
        }
    }

    /// `records/accept` in the shared database: the caller accepts shares they were invited to; the zones
    /// then appear in their shared database.
    func acceptShares(_ database: RecordDatabase, _ request: AcceptSharesRequest) async throws -> ZonesResponse {
        let caller = try database.requireCaller()
        guard database.scope == .shared else { throw NimbusError.badRequest("shares are accepted in the shared database") }
        guard (1...Self.maxOperations).contains(request.shortGUIDs.count) else {
            throw NimbusError.badRequest("shortGUIDs must hold 1 to \(Self.maxOperations) shares")
        }
        var answer = [ZoneResult]()
        for item in request.shortGUIDs {
            guard let (owner, zoneName, share) = Self.share(shortGUID: item.value),
                (try? Identifiers.validateZoneName(zoneName)) != nil
            else {
                answer.append(
                    .failure(ZoneError(zoneID: .defaultZone, error: .badRequest("\(item.value) is not a share's shortGUID"))))
                continue
            }
            let zoneID = ZoneID(zoneName: zoneName, ownerRecordName: owner)
            let zone = ZoneKey(
                accountID: owner,
                address: ZoneAddress(
                    service: RecordDatabase.service(database.container, database.environment, .private), name: zoneName))
            do {
                try await server.store.acceptGrant(zone, scope: share, grantee: caller.userRecordName)
                let scope = SharedScope(
                    grants: try await server.store.grants(zone).filter { $0.grantee == caller.userRecordName })
                let state = try await server.store.zoneState(zone)
                answer.append(.zone(ZoneWire(zoneID: zoneID, syncToken: state.flatMap { scope?.token($0.token) }, atomic: true)))
            } catch StoreError.missing {
                answer.append(
                    .failure(
                        ZoneError(
                            zoneID: zoneID, error: NimbusError(.zoneNotFound, "zone \(zoneName) has no such share with you"))))
            }
        }
        return ZonesResponse(zones: answer)
    }

    /// The zones shared with the caller (wholly or in part) that they accepted, once each, as their shared
    /// database lists them, with what each shares with them.
    func sharedZones(_ database: RecordDatabase) async throws -> [(zone: GrantedZone, scope: SharedScope)] {
        let caller = try database.requireCaller()
        let granted = try await server.store.grantedZones(
            grantee: caller.userRecordName, service: RecordDatabase.service(database.container, database.environment, .private)
        ).filter(\.grant.accepted)
        // The store lists a zone's grants together, one row per share.
        var zones = [(zone: GrantedZone, grants: [ZoneGrant])]()
        for row in granted {
            if let last = zones.last, last.zone.owner == row.owner, last.zone.name == row.name {
                zones[zones.count - 1].grants.append(row.grant)
            } else {
                zones.append((row, [row.grant]))
            }
        }
        return zones.compactMap { zone, grants in SharedScope(grants: grants).map { (zone, $0) } }
    }
}

extension RecordWire {
    /// For a share record: marks the participants whose grant of this share is accepted.
    fileprivate mutating func markAcceptance(_ acceptedGrants: [ZoneGrant]) {
        guard let participants else { return }
        let accepted = Set(acceptedGrants.filter { $0.scope == recordName }.map(\.grantee))
        self.participants = participants.map { participant in
            var participant = participant
            if let name = participant.userIdentity.userRecordName, accepted.contains(name) {
                participant.acceptanceStatus = "ACCEPTED"
            }
            return participant
        }
    }
}

extension RecordResult {
    fileprivate var record: RecordWire? { if case .record(let record) = self { record } else { nil } }
}
