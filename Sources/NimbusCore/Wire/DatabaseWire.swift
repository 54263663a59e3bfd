// Request and response bodies of `/database/1/{container}/{environment}/{database}/…`, with CloudKit Web
// Services' keys, so existing CloudKit web clients work unchanged.

/// `records/modify`: operations applied in order; `atomic` (default true) matters in custom zones only.
public struct RecordsModifyRequest: Codable, Sendable {
    public var operations: [RecordOperation]
    public var zoneID: ZoneID?
    public var atomic: Bool?
    public var desiredKeys: [String]?
    /// INT64 values as strings in the answer.
    public var numbersAsStrings: Bool?

    public init(operations: [RecordOperation], zoneID: ZoneID? = nil, atomic: Bool? = nil, desiredKeys: [String]? = nil) {
        self.operations = operations
        self.zoneID = zoneID
        self.atomic = atomic
        self.desiredKeys = desiredKeys
    }
}

/// The answer of `records/modify`, `records/lookup` and `records/changes`: one item per record, in order.
public struct RecordsResponse: Codable, Sendable {
    public var records: [RecordResult]
    /// `records/changes` only.
    public var syncToken: String?
    public var moreComing: Bool?

    public init(records: [RecordResult], syncToken: String? = nil, moreComing: Bool? = nil) {
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// `records/lookup`.
public struct RecordsLookupRequest: Codable, Sendable {
    public struct Item: Codable, Sendable {
        public var recordName: String
        public var desiredKeys: [String]?
        public init(recordName: String) { self.recordName = recordName }
    }

    public var records: [Item]
    public var zoneID: ZoneID?
    public var desiredKeys: [String]?
    /// INT64 values as strings in the answer.
    public var numbersAsStrings: Bool?

    public init(records: [Item], zoneID: ZoneID? = nil, desiredKeys: [String]? = nil) {
        self.records = records
        self.zoneID = zoneID
        self.desiredKeys = desiredKeys
    }
}

/// A query: records of one type matching every filter, in the sort order.
public struct RecordQuery: Codable, Sendable, Hashable {
    public var recordType: String
    public var filterBy: [QueryFilter]?
    public var sortBy: [QuerySort]?

    public init(recordType: String, filterBy: [QueryFilter]? = nil, sortBy: [QuerySort]? = nil) {
        self.recordType = recordType
        self.filterBy = filterBy
        self.sortBy = sortBy
    }
}

/// One sort key of a query; `relativeLocation` sorts a LOCATION field by distance from it.
public struct QuerySort: Codable, Sendable, Hashable {
    public var fieldName: String?
    public var systemFieldName: String?
    public var ascending: Bool?
    public var relativeLocation: FieldValue?

    public init(
        fieldName: String? = nil, systemFieldName: String? = nil, ascending: Bool? = nil, relativeLocation: FieldValue? = nil
    ) {
        self.fieldName = fieldName
        self.systemFieldName = systemFieldName
        self.ascending = ascending
        self.relativeLocation = relativeLocation
    }
}

/// `records/query`.
public struct RecordsQueryRequest: Codable, Sendable {
    public var query: RecordQuery
    public var zoneID: ZoneID?
    public var zoneWide: Bool?
    public var resultsLimit: Int?
    public var continuationMarker: String?
    public var desiredKeys: [String]?
    /// INT64 values as strings in the answer.
    public var numbersAsStrings: Bool?

    public init(
        query: RecordQuery, zoneID: ZoneID? = nil, zoneWide: Bool? = nil, resultsLimit: Int? = nil,
        continuationMarker: String? = nil,
        desiredKeys: [String]? = nil
    ) {
        self.query = query
        self.zoneID = zoneID
        self.zoneWide = zoneWide
        self.resultsLimit = resultsLimit
        self.continuationMarker = continuationMarker
        self.desiredKeys = desiredKeys
    }
}

public struct RecordsQueryResponse: Codable, Sendable {
    public var records: [RecordResult]
    /// Present when more records match; send the same query again with it.
    public var continuationMarker: String?

    public init(records: [RecordResult], continuationMarker: String?) {
        self.records = records
        self.continuationMarker = continuationMarker
    }
}

/// A zone as `zones/*` and `changes/database` answer it.
public struct ZoneWire: Codable, Sendable, Hashable {
    public var zoneID: ZoneID
    public var syncToken: String?
    public var atomic: Bool?
    /// `changes/database` only: the zone was deleted.
    public var deleted: Bool?

    public init(zoneID: ZoneID, syncToken: String? = nil, atomic: Bool? = nil, deleted: Bool? = nil) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.atomic = atomic
        self.deleted = deleted
    }
}

/// A per-zone failure in a zones answer.
public struct ZoneError: Codable, Sendable, Hashable {
    public var zoneID: ZoneID
    public var reason: String
    public var serverErrorCode: ErrorCode
    public var uuid: String

    public init(zoneID: ZoneID, error: NimbusError) {
        self.zoneID = zoneID
        self.reason = error.reason
        self.serverErrorCode = error.code
        self.uuid = error.uuid
    }
}

/// An item of a zones answer: the zone, or why it failed. Encoded flat, as CloudKit does.
public enum ZoneResult: Codable, Sendable, Hashable {
    case zone(ZoneWire)
    case failure(ZoneError)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let failure = try? container.decode(ZoneError.self) {
            self = .failure(failure)
        } else {
            self = .zone(try container.decode(ZoneWire.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .zone(let zone): try container.encode(zone)
        case .failure(let failure): try container.encode(failure)
        }
    }
}

public struct ZonesResponse: Codable, Sendable {
    public var zones: [ZoneResult]
    public init(zones: [ZoneResult]) { self.zones = zones }
}

/// `zones/lookup`.
public struct ZonesLookupRequest: Codable, Sendable {
    public var zones: [ZoneWire]
    public init(zones: [ZoneWire]) { self.zones = zones }

    enum CodingKeys: String, CodingKey { case zones }

    /// Apple's documented body lists zone IDs (`{"zoneName": …}`); some clients send zone dictionaries
    /// (`{"zoneID": {…}}`). Both are read.
    public init(from decoder: any Decoder) throws {
        struct Item: Decodable {
            var zone: ZoneWire
            enum Keys: String, CodingKey { case zoneID }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: Keys.self)
                zone = container.contains(.zoneID) ? try ZoneWire(from: decoder) : ZoneWire(zoneID: try ZoneID(from: decoder))
            }
        }
        zones = try decoder.container(keyedBy: CodingKeys.self).decode([Item].self, forKey: .zones).map(\.zone)
    }
}

/// `zones/modify`: `create` and `delete`, applied in order.
public struct ZonesModifyRequest: Codable, Sendable {
    public struct Operation: Codable, Sendable {
        public enum OperationType: String, Codable, Sendable { case create, delete }
        public var operationType: OperationType
        public var zone: ZoneWire

        public init(_ operationType: OperationType, _ zone: ZoneWire) {
            self.operationType = operationType
            self.zone = zone
        }
    }

    public var operations: [Operation]
    public init(operations: [Operation]) { self.operations = operations }
}

/// `changes/database` (and its older name `zones/changes`).
public struct DatabaseChangesRequest: Codable, Sendable {
    public var syncToken: String?
    public var resultsLimit: Int?

    public init(syncToken: String? = nil, resultsLimit: Int? = nil) {
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
    }
}

public struct DatabaseChangesResponse: Codable, Sendable {
    public var zones: [ZoneWire]
    public var syncToken: String
    public var moreComing: Bool

    public init(zones: [ZoneWire], syncToken: String, moreComing: Bool) {
        self.zones = zones
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// What to fetch of one zone's changes; unset keys take the request's top-level values.
public struct ZoneChangesOptions: Codable, Sendable {
    public var zoneID: ZoneID?
    public var syncToken: String?
    public var resultsLimit: Int?
    public var desiredKeys: [String]?
    public var desiredRecordTypes: [String]?

    public init(
        zoneID: ZoneID? = nil, syncToken: String? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        desiredRecordTypes: [String]? = nil
    ) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
        self.desiredRecordTypes = desiredRecordTypes
    }
}

/// `changes/zone`.
public struct ZoneChangesRequest: Codable, Sendable {
    public var zones: [ZoneChangesOptions]
    public var resultsLimit: Int?
    public var desiredKeys: [String]?
    public var desiredRecordTypes: [String]?
    /// INT64 values as strings in the answer; CloudKit's documentation spells this key both ways.
    public var numberAsStrings: Bool?
    public var numbersAsStrings: Bool?

    public init(
        zones: [ZoneChangesOptions], resultsLimit: Int? = nil, desiredKeys: [String]? = nil, desiredRecordTypes: [String]? = nil
    ) {
        self.zones = zones
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
        self.desiredRecordTypes = desiredRecordTypes
    }
}

/// One zone's changes: records changed since its token (tombstones with `deleted: true`), or an error.
public struct ZoneChanges: Codable, Sendable {
    public var zoneID: ZoneID
    public var records: [RecordWire]?
    public var syncToken: String?
    public var moreComing: Bool?
    public var serverErrorCode: ErrorCode?
    public var reason: String?

    public init(zoneID: ZoneID, records: [RecordWire], syncToken: String, moreComing: Bool) {
        self.zoneID = zoneID
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }

    public init(zoneID: ZoneID, error: NimbusError) {
        self.zoneID = zoneID
        self.serverErrorCode = error.code
        self.reason = error.reason
    }
}

public struct ZoneChangesResponse: Codable, Sendable {
    public var zones: [ZoneChanges]
    public init(zones: [ZoneChanges]) { self.zones = zones }
}

/// `records/changes`: the older single-zone form of `changes/zone`.
public struct RecordsChangesRequest: Codable, Sendable {
    public var zoneID: ZoneID
    public var syncToken: String?
    public var resultsLimit: Int?
    public var desiredKeys: [String]?
    /// INT64 values as strings in the answer.
    public var numbersAsStrings: Bool?

    public init(zoneID: ZoneID, syncToken: String? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
    }
}

/// `users/caller`: the signed-in user as a CloudKit user identity.
public struct UserIdentity: Codable, Sendable, Hashable {
    public var userRecordName: String
    /// How the user was found (`users/discover`).
    public var lookupInfo: LookupInfo?
    /// The user's names, when they gave them and may be discovered.
    public var nameComponents: NameComponents?

    public init(userRecordName: String, lookupInfo: LookupInfo? = nil, nameComponents: NameComponents? = nil) {
        self.userRecordName = userRecordName
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
    }

    /// One way to find a user: by email address, phone number or user record name.
    public struct LookupInfo: Codable, Sendable, Hashable {
        public var emailAddress: String?
        public var phoneNumber: String?
        public var userRecordName: String?

        public init(emailAddress: String? = nil, phoneNumber: String? = nil, userRecordName: String? = nil) {
            self.emailAddress = emailAddress
            self.phoneNumber = phoneNumber
            self.userRecordName = userRecordName
        }
    }

    public struct NameComponents: Codable, Sendable, Hashable {
        public var givenName: String?
        public var familyName: String?

        public init(givenName: String?, familyName: String?) {
            self.givenName = givenName
            self.familyName = familyName
        }
    }
}

/// `users/caller` and `users/discover`.
public struct UsersResponse: Codable, Sendable {
    public var users: [UserIdentity]
    public init(users: [UserIdentity]) { self.users = users }
}

/// `users/discover` (POST): the users to find; only those who chose to be discoverable are answered.
public struct UsersDiscoverRequest: Codable, Sendable {
    public var lookupInfos: [UserIdentity.LookupInfo]
    public init(lookupInfos: [UserIdentity.LookupInfo]) { self.lookupInfos = lookupInfos }
}

/// `users/current`: the older shape of `users/caller`, which clients still call.
public struct CurrentUserResponse: Codable, Sendable {
    public var userRecordName: String
    public var firstName: String?
    public var lastName: String?

    public init(userRecordName: String, firstName: String?, lastName: String?) {
        self.userRecordName = userRecordName
        self.firstName = firstName
        self.lastName = lastName
    }
}

/// `users/lookup/email` and `users/lookup/id`, the legacy forms of `users/discover`.
public struct UsersLookupRequest: Codable, Sendable {
    public struct Item: Codable, Sendable {
        public var emailAddress: String?
        public var userRecordName: String?
        public init(emailAddress: String? = nil, userRecordName: String? = nil) {
            self.emailAddress = emailAddress
            self.userRecordName = userRecordName
        }
    }

    public var users: [Item]
    public init(users: [Item]) { self.users = users }
}

/// The answer of `users/lookup/*`: a user as the legacy endpoints described one.
public struct LegacyUsersResponse: Codable, Sendable {
    public struct User: Codable, Sendable, Hashable {
        public var userRecordName: String
        public var firstName: String?
        public var lastName: String?
        public var emailAddress: String?

        public init(userRecordName: String, firstName: String?, lastName: String?, emailAddress: String?) {
            self.userRecordName = userRecordName
            self.firstName = firstName
            self.lastName = lastName
            self.emailAddress = emailAddress
        }
    }

    public var users: [User]
    public init(users: [User]) { self.users = users }
}

/// `assets/upload`: where to upload the files of asset fields.
public struct AssetUploadRequest: Codable, Sendable {
    public struct Token: Codable, Sendable {
        public var recordName: String?
        public var recordType: String
        public var fieldName: String

        public init(recordName: String? = nil, recordType: String, fieldName: String) {
            self.recordName = recordName
            self.recordType = recordType
            self.fieldName = fieldName
        }
    }

    public var tokens: [Token]
    public var zoneID: ZoneID?

    public init(tokens: [Token], zoneID: ZoneID? = nil) {
        self.tokens = tokens
        self.zoneID = zoneID
    }
}

public struct AssetUploadResponse: Codable, Sendable {
    public struct Token: Codable, Sendable {
        public var recordName: String?
        public var fieldName: String
        /// POST the file's bytes here within 15 minutes.
        public var url: String

        public init(recordName: String?, fieldName: String, url: String) {
            self.recordName = recordName
            self.fieldName = fieldName
            self.url = url
        }
    }

    public var tokens: [Token]
    public init(tokens: [Token]) { self.tokens = tokens }
}

/// The answer to an upload: the asset value to put in the record's field.
public struct AssetUploadResult: Codable, Sendable {
    public var singleFile: AssetValue
    public init(singleFile: AssetValue) { self.singleFile = singleFile }
}

/// `assets/rereference`: new receipts for the asset files records already hold, so other records can
/// hold the same files without uploading them again.
public struct AssetRereferenceRequest: Codable, Sendable {
    public struct Item: Codable, Sendable {
        public var recordName: String
        public var fieldName: String
        public init(recordName: String, fieldName: String) {
            self.recordName = recordName
            self.fieldName = fieldName
        }
    }

    public var assets: [Item]
    public var zoneID: ZoneID?
    public init(assets: [Item], zoneID: ZoneID? = nil) {
        self.assets = assets
        self.zoneID = zoneID
    }
}

/// The answer of `assets/rereference`, item by item: the field's value with a fresh receipt in each
/// asset (ready to save into another record), or why not.
public struct AssetRereferenceResponse: Codable, Sendable {
    public enum Item: Codable, Sendable {
        case asset(recordName: String, fieldName: String, value: FieldValue)
        case failure(RecordError)

        enum CodingKeys: String, CodingKey { case recordName, fieldName }

        public init(from decoder: any Decoder) throws {
            if let failure = try? RecordError(from: decoder) {
                self = .failure(failure)
            } else {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                self = .asset(
                    recordName: try container.decode(String.self, forKey: .recordName),
                    fieldName: try container.decode(String.self, forKey: .fieldName), value: try FieldValue(from: decoder))
            }
        }

        /// Flat, as a field dictionary with the record and field it came from: `{recordName, fieldName, value, type}`.
        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .failure(let failure): try failure.encode(to: encoder)
            case .asset(let recordName, let fieldName, let value):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(recordName, forKey: .recordName)
                try container.encode(fieldName, forKey: .fieldName)
                try value.encode(to: encoder)
            }
        }
    }

    public var assets: [Item]
    public init(assets: [Item]) { self.assets = assets }
}

/// `records/accept` (shared database): accept shares by their shortGUIDs.
public struct AcceptSharesRequest: Codable, Sendable {
    public struct ShortGUID: Codable, Sendable {
        public var value: String
        public init(value: String) { self.value = value }
    }

    public var shortGUIDs: [ShortGUID]
    public init(shortGUIDs: [ShortGUID]) { self.shortGUIDs = shortGUIDs }
}
