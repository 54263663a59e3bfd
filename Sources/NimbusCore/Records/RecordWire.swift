/// A record as CloudKit Web Services sends it: user fields plus system fields.
package struct RecordWire: Hashable, Codable, Sendable {
    /// Unique within its zone; the server generates a UUID when a create omits it.
    package var recordName: String?
    package var recordType: String?
    /// The server's version token; required by `update`, `replace` and `delete`.
    package var recordChangeTag: String?
    package var fields: [String: FieldValue]?
    /// Fields the record no longer has: sent as `{"value": null}` (or `{}`), which an update reads as
    /// "remove this field", as CloudKit does.
    package var clearedFields: Set<String>?
    package var zoneID: ZoneID?
    /// `{timestamp, userRecordName, deviceID}`; answers only.
    package var created: Stamp?
    package var modified: Stamp?
    /// True in change feeds for a record that was deleted.
    package var deleted: Bool?
    /// The record this one hangs under in a shared hierarchy.
    package var parent: RecordReference?
    /// The root of a shared hierarchy: its share record.
    package var share: RecordReference?
    /// A share record of a hierarchy: the hierarchy's root record.
    package var forRecord: RecordReference?
    /// Share records (`recordType: "cloudkit.share"`): who the zone or hierarchy is shared with, and its address.
    package var participants: [ShareParticipant]?
    package var publicPermission: String?
    package var shortGUID: String?

    package init(
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
    package struct Stamp: Hashable, Codable, Sendable {
        package var timestamp: Int64
        package var userRecordName: String
        package var deviceID: String

        package init(timestamp: Int64, userRecordName: String, deviceID: String) {
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

    package init(from decoder: any Decoder) throws {
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

    package func encode(to encoder: any Encoder) throws {
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
package struct ShareParticipant: Hashable, Codable, Sendable {
    package struct Identity: Hashable, Codable, Sendable {
        package struct LookupInfo: Hashable, Codable, Sendable {
            package var emailAddress: String?
            package init(emailAddress: String?) { self.emailAddress = emailAddress }
        }

        package var userRecordName: String?
        package var lookupInfo: LookupInfo?

        package init(userRecordName: String? = nil, emailAddress: String? = nil) {
            self.userRecordName = userRecordName
            self.lookupInfo = emailAddress.map { LookupInfo(emailAddress: $0) }
        }
    }

    package var userIdentity: Identity
    package var permission: String
    /// `OWNER` or `USER`.
    package var type: String?
    /// `INVITED` or `ACCEPTED`.
    package var acceptanceStatus: String?

    package init(userIdentity: Identity, permission: String, type: String? = nil, acceptanceStatus: String? = nil) {
        self.userIdentity = userIdentity
        self.permission = permission
        self.type = type
        self.acceptanceStatus = acceptanceStatus
    }
}

/// One item of `records/modify`.
package struct RecordOperation: Hashable, Codable, Sendable {
    package var operationType: OperationType
    package var record: RecordWire
    package var desiredKeys: [String]?

    package init(_ operationType: OperationType, _ record: RecordWire) {
        self.operationType = operationType
        self.record = record
    }

    package enum OperationType: String, Codable, Sendable, CaseIterable {
        case create, update, forceUpdate, replace, forceReplace, delete, forceDelete

        /// Whether the operation must name the record's current change tag.
        package var checksChangeTag: Bool { self == .update || self == .replace || self == .delete }
    }
}

/// A per-item failure in a batch answer: the HTTP status stays 200 while items fail on their own.
package struct RecordError: Hashable, Codable, Sendable {
    package var recordName: String?
    package var reason: String
    package var serverErrorCode: ErrorCode
    package var uuid: String
    package var retryAfter: Int?
    /// On `CONFLICT`: the record as the server has it, so the client can merge.
    package var serverRecord: RecordWire?

    package init(recordName: String?, error: NimbusError, serverRecord: RecordWire? = nil) {
        self.recordName = recordName
        self.reason = error.reason
        self.serverErrorCode = error.code
        self.uuid = error.uuid
        self.retryAfter = error.retryAfter
        self.serverRecord = serverRecord
    }
}

/// An item of a batch answer: the record, or why it failed. Encoded flat, as CloudKit does.
package enum RecordResult: Hashable, Codable, Sendable {
    case record(RecordWire)
    case failure(RecordError)

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let failure = try? container.decode(RecordError.self) {
            self = .failure(failure)
        } else {
            self = .record(try container.decode(RecordWire.self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .record(let record): try container.encode(record)
        case .failure(let failure): try container.encode(failure)
        }
    }
}
