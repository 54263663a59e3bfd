import NimbusCore

/// A zone of a database, named by its owner and name (CloudKit's `CKRecordZone.ID`).
public struct RecordZoneID: Hashable, Sendable, Codable, CustomStringConvertible {
    public var zoneName: String
    /// The owner's user record name; nil means the signed-in user.
    public var ownerName: String?

    public init(zoneName: String, ownerName: String? = nil) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    public static let `default` = RecordZoneID(zoneName: ZoneID.defaultZone.zoneName)

    public var description: String { ownerName.map { "\(zoneName) of \($0)" } ?? zoneName }

    var wire: ZoneID { ZoneID(zoneName: zoneName, ownerRecordName: ownerName) }
    init(_ wire: ZoneID) { self.init(zoneName: wire.zoneName, ownerName: wire.ownerRecordName) }

    /// Identity ignores the owner when one side leaves it to mean "the signed-in user".
    func matches(_ other: RecordZoneID) -> Bool {
        zoneName == other.zoneName && (ownerName == nil || other.ownerName == nil || ownerName == other.ownerName)
    }
}

/// A record's identity: its name within its zone (CloudKit's `CKRecord.ID`).
public struct RecordID: Hashable, Sendable, Codable, CustomStringConvertible {
    public var recordName: String
    public var zoneID: RecordZoneID

    public init(recordName: String, zoneID: RecordZoneID = .default) {
        self.recordName = recordName
        self.zoneID = zoneID
    }

    public var description: String { "\(recordName) in \(zoneID)" }
}

/// A zone as the database lists it.
public struct RecordZone: Hashable, Sendable {
    public var zoneID: RecordZoneID

    public init(zoneID: RecordZoneID) { self.zoneID = zoneID }
    public init(zoneName: String) { self.init(zoneID: RecordZoneID(zoneName: zoneName)) }
}

/// A reference from one record to another in the same zone, with what happens when the target goes.
public struct Reference: Hashable, Sendable {
    public enum Action: String, Sendable {
        /// Nothing: the reference may dangle.
        case none = "NONE"
        /// Deleting the target deletes the referencing record too.
        case deleteSelf = "DELETE_SELF"
        /// The target must exist, and cannot be deleted while this record references it.
        case validate = "VALIDATE"
    }

    public var recordID: RecordID
    public var action: Action

    public init(recordID: RecordID, action: Action) {
        self.recordID = recordID
        self.action = action
    }

    public init(_ record: Record, action: Action) { self.init(recordID: record.recordID, action: action) }

    var wire: RecordReference {
        RecordReference(recordName: recordID.recordName, action: RecordReference.Action(rawValue: action.rawValue))
    }

    init(_ wire: RecordReference, zoneID: RecordZoneID) {
        self.init(
            recordID: RecordID(recordName: wire.recordName, zoneID: wire.zoneID.map(RecordZoneID.init) ?? zoneID),
            action: wire.action.flatMap { Action(rawValue: $0.rawValue) } ?? .none)
    }
}
