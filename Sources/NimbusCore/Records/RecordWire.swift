/// A record as CloudKit Web Services sends it: user fields plus system fields.
public struct RecordWire: Hashable, Codable, Sendable {
    /// Unique within its zone; the server generates a UUID when a create omits it.
    public var recordName: String?
    public var recordType: String?
    /// The server's version token; required by `update`, `replace` and `delete`.
    public var recordChangeTag: String?
    public var fields: [String: FieldValue]?
    public var zoneID: ZoneID?
    /// `{timestamp, userRecordName, deviceID}`; answers only.
    public var created: Stamp?
    public var modified: Stamp?
    /// True in change feeds for a record that was deleted.
    public var deleted: Bool?
    /// The record this one hangs under in a shared hierarchy.
    public var parent: RecordReference?
    /// The root of a shared hierarchy: its share record.
    public var share: RecordReference?
    /// A share record of a hierarchy: the hierarchy's root record.
    public var forRecord: RecordReference?
    /// Share records (`recordType: "cloudkit.share"`): who the zone or hierarchy is shared with, and its address.
    public var participants: [ShareParticipant]?
    public var publicPermission: String?
    public var shortGUID: String?

    public init(
        recordName: String? = nil, recordType: String? = nil, recordChangeTag: String? = nil, fields: [String: FieldValue]? = nil,
        zoneID: ZoneID? = nil
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.recordChangeTag = recordChangeTag
        self.fields = fields
        self.zoneID = zoneID
    }

    /// Who changed a record, when (milliseconds since 1970) and from which device.
    public struct Stamp: Hashable, Codable, Sendable {
        public var timestamp: Int64
        public var userRecordName: String
        public var deviceID: String

        public init(timestamp: Int64, userRecordName: String, deviceID: String) {
            self.timestamp = timestamp
            self.userRecordName = userRecordName
            self.deviceID = deviceID
        }
    }
}

/// A user a share includes: who (by record name or email), with which permission, and whether they
/// accepted. Permissions are CloudKit's `READ_ONLY` and `READ_WRITE`.
public struct ShareParticipant: Hashable, Codable, Sendable {
    public struct Identity: Hashable, Codable, Sendable {
        public struct LookupInfo: Hashable, Codable, Sendable {
            public var emailAddress: String?
            public init(emailAddress: String?) { self.emailAddress = emailAddress }
        }

        public var userRecordName: String?
        public var lookupInfo: LookupInfo?

        public init(userRecordName: String? = nil, emailAddress: String? = nil) {
            self.userRecordName = userRecordName
            self.lookupInfo = emailAddress.map { LookupInfo(emailAddress: $0) }
        }
    }

    public var userIdentity: Identity
    public var permission: String
    /// `OWNER` or `USER`.
    public var type: String?
    /// `INVITED` or `ACCEPTED`.
    public var acceptanceStatus: String?

    public init(userIdentity: Identity, permission: String, type: String? = nil, acceptanceStatus: String? = nil) {
        self.userIdentity = userIdentity
        self.permission = permission
        self.type = type
        self.acceptanceStatus = acceptanceStatus
    }
}

/// One item of `records/modify`.
public struct RecordOperation: Hashable, Codable, Sendable {
    public var operationType: OperationType
    public var record: RecordWire
    public var desiredKeys: [String]?

    public init(_ operationType: OperationType, _ record: RecordWire) {
        self.operationType = operationType
        self.record = record
    }

    public enum OperationType: String, Codable, Sendable, CaseIterable {
        case create, update, forceUpdate, replace, forceReplace, delete, forceDelete

        /// Whether the operation must name the record's current change tag.
        public var checksChangeTag: Bool { self == .update || self == .replace || self == .delete }
    }
}

/// A per-item failure in a batch answer: the HTTP status stays 200 while items fail on their own.
public struct RecordError: Hashable, Codable, Sendable {
    public var recordName: String?
    public var reason: String
    public var serverErrorCode: ErrorCode
    public var uuid: String
    public var retryAfter: Int?
    /// On `CONFLICT`: the record as the server has it, so the client can merge.
    public var serverRecord: RecordWire?

    public init(recordName: String?, error: NimbusError, serverRecord: RecordWire? = nil) {
        self.recordName = recordName
        self.reason = error.reason
        self.serverErrorCode = error.code
        self.uuid = error.uuid
        self.retryAfter = error.retryAfter
        self.serverRecord = serverRecord
    }
}

/// An item of a batch answer: the record, or why it failed. Encoded flat, as CloudKit does.
public enum RecordResult: Hashable, Codable, Sendable {
    case record(RecordWire)
    case failure(RecordError)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let failure = try? container.decode(RecordError.self) {
            self = .failure(failure)
        } else {
            self = .record(try container.decode(RecordWire.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .record(let record): try container.encode(record)
        case .failure(let failure): try container.encode(failure)
        }
    }
}
