import NimbusCore

/// A zone of the user's private database shared with other users (CloudKit's zone-wide `CKShare`).
public struct ZoneShare: Sendable, Hashable {
    public enum Permission: String, Sendable { case readOnly = "READ_ONLY", readWrite = "READ_WRITE" }

    public struct Participant: Sendable, Hashable {
        public var emailAddress: String?
        public var userRecordName: String?
        public var permission: Permission
        public var accepted: Bool

        /// Invites the user with this email address.
        public init(emailAddress: String, permission: Permission) {
            self.emailAddress = emailAddress
            self.permission = permission
            self.accepted = false
        }

        var wire: ShareParticipant {
            ShareParticipant(
                userIdentity: .init(userRecordName: userRecordName, emailAddress: emailAddress), permission: permission.rawValue, type: "USER")
        }

        init(_ wire: ShareParticipant) {
            emailAddress = wire.userIdentity.lookupInfo?.emailAddress
            userRecordName = wire.userIdentity.userRecordName
            permission = Permission(rawValue: wire.permission) ?? .readOnly
            accepted = wire.acceptanceStatus == "ACCEPTED"
        }
    }

    public var zoneID: RecordZoneID
    public var participants: [Participant]
    /// What participants accept the share with (`CloudDatabase.acceptShare`).
    public var shortGUID: String
}

extension CloudDatabase {
    /// Shares a custom zone with other users, replacing its participants. They see it in their shared
    /// database once they accept; read-write participants can change its records.
    public func shareZone(_ zoneID: RecordZoneID, with participants: [ZoneShare.Participant]) async throws -> ZoneShare {
        var record = RecordWire(recordName: "cloudkit.zoneshare", recordType: "cloudkit.share")
        record.participants = participants.map(\.wire)
        record.publicPermission = "NONE"
        let answer: RecordsResponse = try await container.client.send(
            .POST, path("records/modify"),
            body: RecordsModifyRequest(operations: [RecordOperation(.forceReplace, record)], zoneID: zoneID.wire))
        switch answer.records.first {
        case .record(let share):
            return ZoneShare(
                zoneID: zoneID, participants: (share.participants ?? []).map(ZoneShare.Participant.init), shortGUID: share.shortGUID ?? "")
        case .failure(let failure): throw Self.error(failure)
        case nil: throw NimbusError(.internalError, "the server answered no share")
        }
    }

    /// Stops sharing a zone.
    public func unshareZone(_ zoneID: RecordZoneID) async throws {
        try await deleteRecord(withID: RecordID(recordName: "cloudkit.zoneshare", zoneID: zoneID))
    }

    /// Accepts a share (in the shared database); returns the zone, as the shared database names it.
    public func acceptShare(_ shortGUID: String) async throws -> RecordZoneID {
        let answer: ZonesResponse = try await container.client.send(
            .POST, path("records/accept"), body: AcceptSharesRequest(shortGUIDs: [.init(value: shortGUID)]))
        switch answer.zones.first {
        case .zone(let zone): return RecordZoneID(zone.zoneID)
        case .failure(let failure): throw NimbusError(failure.serverErrorCode, failure.reason, uuid: failure.uuid)
        case nil: throw NimbusError(.internalError, "the server answered no zone")
        }
    }
}
