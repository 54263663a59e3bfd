// Request and response bodies of `/database/1/{container}/{environment}/{database}/…`, with CloudKit Web
// Services' keys, so existing CloudKit web clients work unchanged.

/// `records/modify`: operations applied in order; `atomic` (default true) matters in custom zones only.
package struct RecordsModifyRequest: Codable, Sendable {
    package var operations: [RecordOperation]
    package var zoneID: ZoneID?
    package var atomic: Bool?
    package var desiredKeys: [String]?
    /// INT64 values as strings in the answer.
    package var numbersAsStrings: Bool?

    package init(operations: [RecordOperation], zoneID: ZoneID? = nil, atomic: Bool? = nil, desiredKeys: [String]? = nil) {
        self.operations = operations
        self.zoneID = zoneID
        self.atomic = atomic
        self.desiredKeys = desiredKeys
    }
}

/// The answer of `records/modify`, `records/lookup` and `records/changes`: one item per record, in order.
package struct RecordsResponse: Codable, Sendable {
    package var records: [RecordResult]
    /// `records/changes` only.
    package var syncToken: String?
    package var moreComing: Bool?

    package init(records: [RecordResult], syncToken: String? = nil, moreComing: Bool? = nil) {
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// `records/lookup`.
package struct RecordsLookupRequest: Codable, Sendable {
    package struct Item: Codable, Sendable {
        package var recordName: String
        package var desiredKeys: [String]?
        package init(recordName: String) { self.recordName = recordName }
    }

    package var records: [Item]
    package var zoneID: ZoneID?
    package var desiredKeys: [String]?
    /// INT64 values as strings in the answer.
    package var numbersAsStrings: Bool?

    package init(records: [Item], zoneID: ZoneID? = nil, desiredKeys: [String]? = nil) {
        self.records = records
        self.zoneID = zoneID
        self.desiredKeys = desiredKeys
    }
}

/// `records/query`.
package struct RecordsQueryRequest: Codable, Sendable {
    package var query: RecordQuery
    package var zoneID: ZoneID?
    package var zoneWide: Bool?
    package var resultsLimit: Int?
    package var continuationMarker: String?
    package var desiredKeys: [String]?
    /// INT64 values as strings in the answer.
    package var numbersAsStrings: Bool?

    package init(
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

package struct RecordsQueryResponse: Codable, Sendable {
    package var records: [RecordResult]
    /// Present when more records match; send the same query again with it.
    package var continuationMarker: String?

    package init(records: [RecordResult], continuationMarker: String?) {
        self.records = records
        self.continuationMarker = continuationMarker
    }
}

/// A zone as `zones/*` and `changes/database` answer it.
package struct ZoneWire: Codable, Sendable, Hashable {
    package var zoneID: ZoneID
    package var syncToken: String?
    package var atomic: Bool?
    /// `changes/database` only: the zone was deleted.
    package var deleted: Bool?

    package init(zoneID: ZoneID, syncToken: String? = nil, atomic: Bool? = nil, deleted: Bool? = nil) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.atomic = atomic
        self.deleted = deleted
    }
}

/// A per-zone failure in a zones answer.
package struct ZoneError: Codable, Sendable, Hashable {
    package var zoneID: ZoneID
    package var reason: String
    package var serverErrorCode: ErrorCode
    package var uuid: String

    package init(zoneID: ZoneID, error: NimbusError) {
        self.zoneID = zoneID
        self.reason = error.reason
        self.serverErrorCode = error.code
        self.uuid = error.uuid
    }
}

/// An item of a zones answer: the zone, or why it failed. Encoded flat, as CloudKit does.
package enum ZoneResult: Codable, Sendable, Hashable {
    case zone(ZoneWire)
    case failure(ZoneError)

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let failure = try? container.decode(ZoneError.self) {
            self = .failure(failure)
        } else {
            self = .zone(try container.decode(ZoneWire.self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .zone(let zone): try container.encode(zone)
        case .failure(let failure): try container.encode(failure)
        }
    }
}

package struct ZonesResponse: Codable, Sendable {
    package var zones: [ZoneResult]
    package init(zones: [ZoneResult]) { self.zones = zones }
}

/// `zones/lookup`.
package struct ZonesLookupRequest: Codable, Sendable {
    package var zones: [ZoneWire]
    package init(zones: [ZoneWire]) { self.zones = zones }

    enum CodingKeys: String, CodingKey { case zones }

    /// Apple's documented body lists zone IDs (`{"zoneName": …}`); some clients send zone dictionaries
    /// (`{"zoneID": {…}}`). Both are read.
    package init(from decoder: any Decoder) throws {
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
package struct ZonesModifyRequest: Codable, Sendable {
    package struct Operation: Codable, Sendable {
        package enum OperationType: String, Codable, Sendable { case create, delete }
        package var operationType: OperationType
        package var zone: ZoneWire

        package init(_ operationType: OperationType, _ zone: ZoneWire) {
            self.operationType = operationType
            self.zone = zone
        }
    }

    package var operations: [Operation]
    package init(operations: [Operation]) { self.operations = operations }
}

/// `changes/database` (and its older name `zones/changes`).
package struct DatabaseChangesRequest: Codable, Sendable {
    package var syncToken: String?
    package var resultsLimit: Int?

    package init(syncToken: String? = nil, resultsLimit: Int? = nil) {
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
    }
}

package struct DatabaseChangesResponse: Codable, Sendable {
    package var zones: [ZoneWire]
    package var syncToken: String
    package var moreComing: Bool

    package init(zones: [ZoneWire], syncToken: String, moreComing: Bool) {
        self.zones = zones
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// What to fetch of one zone's changes; unset keys take the request's top-level values.
package struct ZoneChangesOptions: Codable, Sendable {
    package var zoneID: ZoneID?
    package var syncToken: String?
    package var resultsLimit: Int?
    package var desiredKeys: [String]?
    package var desiredRecordTypes: [String]?

    package init(
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
package struct ZoneChangesRequest: Codable, Sendable {
    package var zones: [ZoneChangesOptions]
    package var resultsLimit: Int?
    package var desiredKeys: [String]?
    package var desiredRecordTypes: [String]?
    /// INT64 values as strings in the answer; CloudKit's documentation spells this key both ways.
    package var numberAsStrings: Bool?
    package var numbersAsStrings: Bool?

    package init(
        zones: [ZoneChangesOptions], resultsLimit: Int? = nil, desiredKeys: [String]? = nil, desiredRecordTypes: [String]? = nil
    ) {
        self.zones = zones
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
        self.desiredRecordTypes = desiredRecordTypes
    }
}

/// One zone's changes: records changed since its token (tombstones with `deleted: true`), or an error.
package struct ZoneChanges: Codable, Sendable {
    package var zoneID: ZoneID
    package var records: [RecordWire]?
    package var syncToken: String?
    package var moreComing: Bool?
    package var serverErrorCode: ErrorCode?
    package var reason: String?

    package init(zoneID: ZoneID, records: [RecordWire], syncToken: String, moreComing: Bool) {
        self.zoneID = zoneID
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }

    package init(zoneID: ZoneID, error: NimbusError) {
        self.zoneID = zoneID
        self.serverErrorCode = error.code
        self.reason = error.reason
    }
}

package struct ZoneChangesResponse: Codable, Sendable {
    package var zones: [ZoneChanges]
    package init(zones: [ZoneChanges]) { self.zones = zones }
}

/// `records/changes`: the older single-zone form of `changes/zone`.
package struct RecordsChangesRequest: Codable, Sendable {
    package var zoneID: ZoneID
    package var syncToken: String?
    package var resultsLimit: Int?
    package var desiredKeys: [String]?
    /// INT64 values as strings in the answer.
    package var numbersAsStrings: Bool?

    package init(zoneID: ZoneID, syncToken: String? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
    }
}

/// `users/caller` and `users/discover`.
package struct UsersResponse: Codable, Sendable {
    package var users: [UserIdentity]
    package init(users: [UserIdentity]) { self.users = users }
}

/// `users/discover` (POST): the users to find; only those who chose to be discoverable are answered.
package struct UsersDiscoverRequest: Codable, Sendable {
    package var lookupInfos: [UserIdentity.LookupInfo]
    package init(lookupInfos: [UserIdentity.LookupInfo]) { self.lookupInfos = lookupInfos }
}

/// `users/current`: the older shape of `users/caller`, which clients still call.
package struct CurrentUserResponse: Codable, Sendable {
    package var userRecordName: String
    package var firstName: String?
    package var lastName: String?

    package init(userRecordName: String, firstName: String?, lastName: String?) {
        self.userRecordName = userRecordName
        self.firstName = firstName
        self.lastName = lastName
    }
}

/// `users/lookup/email` and `users/lookup/id`, the legacy forms of `users/discover`.
package struct UsersLookupRequest: Codable, Sendable {
    package struct Item: Codable, Sendable {
        package var emailAddress: String?
        package var userRecordName: String?
        package init(emailAddress: String? = nil, userRecordName: String? = nil) {
            self.emailAddress = emailAddress
            self.userRecordName = userRecordName
        }
    }

    package var users: [Item]
    package init(users: [Item]) { self.users = users }
}

/// The answer of `users/lookup/*`: a user as the legacy endpoints described one.
package struct LegacyUsersResponse: Codable, Sendable {
    package struct User: Codable, Sendable, Hashable {
        package var userRecordName: String
        package var firstName: String?
        package var lastName: String?
        package var emailAddress: String?

        package init(userRecordName: String, firstName: String?, lastName: String?, emailAddress: String?) {
            self.userRecordName = userRecordName
            self.firstName = firstName
            self.lastName = lastName
            self.emailAddress = emailAddress
        }
    }

    package var users: [User]
    package init(users: [User]) { self.users = users }
}

/// `assets/upload`: where to upload the files of asset fields.
package struct AssetUploadRequest: Codable, Sendable {
    package struct Token: Codable, Sendable {
        package var recordName: String?
        package var recordType: String
        package var fieldName: String

        package init(recordName: String? = nil, recordType: String, fieldName: String) {
            self.recordName = recordName
            self.recordType = recordType
            self.fieldName = fieldName
        }
    }

    package var tokens: [Token]
    package var zoneID: ZoneID?

    package init(tokens: [Token], zoneID: ZoneID? = nil) {
        self.tokens = tokens
        self.zoneID = zoneID
    }
}

package struct AssetUploadResponse: Codable, Sendable {
    package struct Token: Codable, Sendable {
        package var recordName: String?
        package var fieldName: String
        /// POST the file's bytes here within 15 minutes.
        package var url: String

        package init(recordName: String?, fieldName: String, url: String) {
            self.recordName = recordName
            self.fieldName = fieldName
            self.url = url
        }
    }

    package var tokens: [Token]
    package init(tokens: [Token]) { self.tokens = tokens }
}

/// The answer to an upload: the asset value to put in the record's field.
package struct AssetUploadResult: Codable, Sendable {
    package var singleFile: AssetValue
    package init(singleFile: AssetValue) { self.singleFile = singleFile }
}

/// `assets/rereference`: new receipts for the asset files records already hold, so other records can
/// hold the same files without uploading them again.
package struct AssetRereferenceRequest: Codable, Sendable {
    package struct Item: Codable, Sendable {
        package var recordName: String
        package var fieldName: String
        package init(recordName: String, fieldName: String) {
            self.recordName = recordName
            self.fieldName = fieldName
        }
    }

    package var assets: [Item]
    package var zoneID: ZoneID?
    package init(assets: [Item], zoneID: ZoneID? = nil) {
        self.assets = assets
        self.zoneID = zoneID
    }
}

/// The answer of `assets/rereference`, item by item: the field's value with a fresh receipt in each
/// asset (ready to save into another record), or why not.
package struct AssetRereferenceResponse: Codable, Sendable {
    package enum Item: Codable, Sendable {
        case asset(recordName: String, fieldName: String, value: FieldValue)
        case failure(RecordError)

        enum CodingKeys: String, CodingKey { case recordName, fieldName }

        package init(from decoder: any Decoder) throws {
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
        package func encode(to encoder: any Encoder) throws {
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

    package var assets: [Item]
    package init(assets: [Item]) { self.assets = assets }
}

/// `records/accept` (shared database): accept shares by their shortGUIDs.
package struct AcceptSharesRequest: Codable, Sendable {
    package struct ShortGUID: Codable, Sendable {
        package var value: String
        package init(value: String) { self.value = value }
    }

    package var shortGUIDs: [ShortGUID]
    package init(shortGUIDs: [ShortGUID]) { self.shortGUIDs = shortGUIDs }
}
