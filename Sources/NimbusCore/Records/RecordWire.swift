/// A record as CloudKit Web Services sends it: user fields plus system fields.
public struct RecordWire: Hashable, Codable, Sendable {
    /// Unique within its zone; the server generates a UUID when a create omits it.
    public var recordName: String?
    public var recordType: String?
    /// The server's version token; required by `update`, `replace` and `delete`.
    public var recordChangeTag: String?
    public var fields: [String: FieldValue]?
    /// Fields the record no longer has: sent as `{"value": null}` (or `{}`), which an update reads as
    /// "remove this field", as CloudKit does.
    public var clearedFields: Set<String>?
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

extension RecordWire {
    enum CodingKeys: String, CodingKey {
        case recordName, recordType, recordChangeTag, fields, zoneID, created, modified, deleted, parent, share, forRecord
        case participants, publicPermission, shortGUID
    }

    /// A field as a request may send it: a value, or null to clear the field (`{"value": null}`, `{}` or
    /// `null`).
    private struct FieldOrNull: Decodable {
        var value: FieldValue?

        init(from decoder: any Decoder) throws {
            if try decoder.singleValueContainer().decodeNil() { return }
            let container = try decoder.container(keyedBy: FieldValue.CodingKeys.self)
            value = try !container.contains(.value) || container.decodeNil(forKey: .value) ? nil : FieldValue(from: decoder)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        recordName = try container.decodeIfPresent(String.self, forKey: .recordName)
        recordType = try container.decodeIfPresent(String.self, forKey: .recordType)
        recordChangeTag = try container.decodeIfPresent(String.self, forKey: .recordChangeTag)
        if let sent = try container.decodeIfPresent([String: FieldOrNull].self, forKey: .fields) {
            fields = sent.compactMapValues(\.value)
            let cleared = Set(sent.filter { $0.value.value == nil }.keys)
            clearedFields = cleared.isEmpty ? nil : cleared
        }
        zoneID = try container.decodeIfPresent(ZoneID.self, forKey: .zoneID)
        created = try container.decodeIfPresent(Stamp.self, forKey: .created)
        modified = try container.decodeIfPresent(Stamp.self, forKey: .modified)
        deleted = try container.decodeIfPresent(Bool.self, forKey: .deleted)
        parent = try container.decodeIfPresent(RecordReference.self, forKey: .parent)
        share = try container.decodeIfPresent(RecordReference.self, forKey: .share)
        forRecord = try container.decodeIfPresent(RecordReference.self, forKey: .forRecord)
        participants = try container.decodeIfPresent([ShareParticipant].self, forKey: .participants)
        publicPermission = try container.decodeIfPresent(String.self, forKey: .publicPermission)
        shortGUID = try container.decodeIfPresent(String.self, forKey: .shortGUID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(recordName, forKey: .recordName)
        try container.encodeIfPresent(recordType, forKey: .recordType)
        try container.encodeIfPresent(recordChangeTag, forKey: .recordChangeTag)
        if fields != nil || clearedFields != nil {
            var nested = container.nestedContainer(keyedBy: FieldName.self, forKey: .fields)
            for (name, value) in fields ?? [:] { try nested.encode(value, forKey: FieldName(name)) }
            for name in clearedFields ?? [] where fields?[name] == nil {
                var cleared = nested.nestedContainer(keyedBy: FieldValue.CodingKeys.self, forKey: FieldName(name))
                try cleared.encodeNil(forKey: .value)
            }
        }
        try container.encodeIfPresent(zoneID, forKey: .zoneID)
        try container.encodeIfPresent(created, forKey: .created)
        try container.encodeIfPresent(modified, forKey: .modified)
        try container.encodeIfPresent(deleted, forKey: .deleted)
        try container.encodeIfPresent(parent, forKey: .parent)
        try container.encodeIfPresent(share, forKey: .share)
        try container.encodeIfPresent(forRecord, forKey: .forRecord)
        try container.encodeIfPresent(participants, forKey: .participants)
        try container.encodeIfPresent(publicPermission, forKey: .publicPermission)
        try container.encodeIfPresent(shortGUID, forKey: .shortGUID)
    }

    private struct FieldName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
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
