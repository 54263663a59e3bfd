import Foundation
import NimbusCore

/// A share of the user's private database: a custom zone (CloudKit's zone-wide `CKShare`), or the
/// hierarchy under a root record — the root and every record whose `parent` chain leads to it
/// (`CKShare(rootRecord:)`).
public struct Share: Sendable, Hashable {
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
                userIdentity: .init(userRecordName: userRecordName, emailAddress: emailAddress), permission: permission.rawValue,
                type: "USER")
        }

        init(_ wire: ShareParticipant) {
            emailAddress = wire.userIdentity.lookupInfo?.emailAddress
            userRecordName = wire.userIdentity.userRecordName
            permission = Permission(rawValue: wire.permission) ?? .readOnly
            accepted = wire.acceptanceStatus == "ACCEPTED"
        }
    }

    /// The share record.
    public var recordID: RecordID
    /// The root of the shared hierarchy; nil for a zone share.
    public var rootRecordID: RecordID?
    public var participants: [Participant]
    /// What participants accept the share with (`CloudDatabase.acceptShare`).
    public var shortGUID: String

    public var zoneID: RecordZoneID { recordID.zoneID }

    /// The record name of a zone's share, as CloudKit names it.
    static let zoneShareName = "cloudkit.zoneshare"

    init(_ wire: RecordWire, recordID: RecordID) {
        self.recordID = recordID
        rootRecordID = wire.forRecord.map { RecordID(recordName: $0.recordName, zoneID: recordID.zoneID) }
        participants = (wire.participants ?? []).map(Participant.init)
        shortGUID = wire.shortGUID ?? ""
    }
}

extension CloudDatabase {
    /// Shares a custom zone with other users, replacing its participants. They see it in their shared
    /// database once they accept; read-write participants can change its records.
    public func shareZone(_ zoneID: RecordZoneID, with participants: [Share.Participant]) async throws -> Share {
        try await saveShare(RecordID(recordName: Share.zoneShareName, zoneID: zoneID), root: nil, participants: participants)
    }

    /// Shares a record of a custom zone and every record under it (by `parent`) with other users,
    /// replacing the participants if the record is already shared. Participants see that zone in their
    /// shared database once they accept, holding only the shared records; read-write participants can
    /// change them and add records under them, but not delete the root.
    public func share(_ rootRecordID: RecordID, with participants: [Share.Participant]) async throws -> Share {
        let root = try await record(for: rootRecordID, desiredKeys: [])
        let shareID = root.share?.recordID ?? RecordID(recordName: "Share-" + UUID().uuidString, zoneID: rootRecordID.zoneID)
        return try await saveShare(shareID, root: rootRecordID, participants: participants)
    }

    private func saveShare(_ shareID: RecordID, root: RecordID?, participants: [Share.Participant]) async throws -> Share {
        var record = RecordWire(recordName: shareID.recordName, recordType: "cloudkit.share")
        record.forRecord = root.map { RecordReference(recordName: $0.recordName) }
        record.participants = participants.map(\.wire)
        record.publicPermission = "NONE"
        let answer: RecordsResponse = try await container.client.send(
            .POST, path("records/modify"),
            body: RecordsModifyRequest(operations: [RecordOperation(.forceReplace, record)], zoneID: shareID.zoneID.wire))
        return try Self.share(answer.records.first, id: shareID)
    }

    /// A share as it stands: its participants and whether each has accepted. Participants can fetch the
    /// shares they are in (from the shared database).
    public func fetchShare(_ shareID: RecordID) async throws -> Share {
        let answer: RecordsResponse = try await container.client.send(
            .POST, path("records/lookup"),
            body: RecordsLookupRequest(records: [.init(recordName: shareID.recordName)], zoneID: shareID.zoneID.wire))
        return try Self.share(answer.records.first, id: shareID)
    }

    private static func share(_ item: RecordResult?, id: RecordID) throws -> Share {
        switch item {
        case .record(let share) where share.participants != nil: return Share(share, recordID: id)
        case .record: throw NimbusError.badRequest("record \(id.recordName) is not a share")
        case .failure(let failure): throw Self.error(failure)
        case nil: throw NimbusError(.internalError, "the server answered no share")
        }
    }

    /// Stops sharing a zone.
    public func unshareZone(_ zoneID: RecordZoneID) async throws {
        try await deleteRecord(withID: RecordID(recordName: Share.zoneShareName, zoneID: zoneID))
    }

    /// Ends a share: its participants lose access to what it shared.
    public func unshare(_ share: Share) async throws {
        try await deleteRecord(withID: share.recordID)
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
