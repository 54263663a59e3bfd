/// JSON Schemas of the record database's wire types (CloudKit Web Services' shapes).
extension WireSchemas {
    private static let number: JSONValue = ["type": "number"]
    private static let strings = array(of: string)
    private static let anyValue: JSONValue = [:]

    static let database: [(String, JSONValue)] = [
        ("ZoneID", object([("zoneName", string), ("ownerRecordName", string)], required: ["zoneName"])),
        (
            "FieldValue",
            object(
                [
                    ("value", anyValue),
                    (
                        "type",
                        [
                            "type": "string",
                            "description": "STRING, INT64, DOUBLE, TIMESTAMP, BYTES, REFERENCE, LOCATION or a *_LIST type",
                        ]
                    ),
                ],
                required: ["value"])
        ),
        (
            "Stamp",
            object(
                [("timestamp", integer), ("userRecordName", string), ("deviceID", string)],
                required: ["timestamp", "userRecordName", "deviceID"])
        ),
        (
            "Record",
            notAnError(
                object(
                    [
                        ("recordName", string), ("recordType", string), ("recordChangeTag", string),
                        ("fields", ["type": "object", "additionalProperties": ref("FieldValue")]), ("zoneID", ref("ZoneID")),
                        ("created", ref("Stamp")), ("modified", ref("Stamp")), ("deleted", boolean), ("parent", anyValue),
                        ("share", anyValue), ("forRecord", anyValue), ("participants", ["type": "array", "items": anyValue]),
                        ("publicPermission", string), ("shortGUID", string),
                    ], required: []))
        ),
        (
            "RecordError",
            object(
                [
                    ("recordName", string), ("reason", string), ("serverErrorCode", string), ("uuid", string),
                    ("serverRecord", ref("Record")),
                ],
                required: ["reason", "serverErrorCode", "uuid"])
        ),
        ("RecordOrError", ["oneOf": [ref("Record"), ref("RecordError")]]),
        (
            "RecordsModifyRequest",
            object(
                [
                    (
                        "operations",
                        array(
                            of: object(
                                [
                                    (
                                        "operationType",
                                        [
                                            "type": "string",
                                            "enum": [
                                                "create", "update", "forceUpdate", "replace", "forceReplace", "delete",
                                                "forceDelete",
                                            ],
                                        ]
                                    ), ("record", ref("Record")),
                                ], required: ["operationType", "record"]))
                    ), ("zoneID", ref("ZoneID")), ("atomic", boolean), ("desiredKeys", strings), ("numbersAsStrings", boolean),
                ], required: ["operations"])
        ),
        (
            "RecordsResponse",
            object(
                [("records", array(of: ref("RecordOrError"))), ("syncToken", string), ("moreComing", boolean)],
                required: ["records"])
        ),
        (
            "RecordsLookupRequest",
            object(
                [
                    ("records", array(of: object([("recordName", string), ("desiredKeys", strings)], required: ["recordName"]))),
                    ("zoneID", ref("ZoneID")), ("desiredKeys", strings), ("numbersAsStrings", boolean),
                ], required: ["records"])
        ),
        (
            "QueryFilter",
            object(
                [
                    ("fieldName", string), ("systemFieldName", string), ("comparator", string), ("fieldValue", ref("FieldValue")),
                    ("distance", number),
                ],
                required: ["comparator", "fieldValue"])
        ),
        (
            "QuerySort",
            object(
                [
                    ("fieldName", string), ("systemFieldName", string), ("ascending", boolean),
                    ("relativeLocation", ref("FieldValue")),
                ], required: [])
        ),
        (
            "RecordsQueryRequest",
            object(
                [
                    (
                        "query",
                        object(
                            [
                                ("recordType", string), ("filterBy", array(of: ref("QueryFilter"))),
                                ("sortBy", array(of: ref("QuerySort"))),
                            ],
                            required: ["recordType"])
                    ), ("zoneID", ref("ZoneID")), ("zoneWide", boolean), ("resultsLimit", integer),
                    ("continuationMarker", string),
                    ("desiredKeys", strings), ("numbersAsStrings", boolean),
                ], required: ["query"])
        ),
        (
            "RecordsQueryResponse",
            object([("records", array(of: ref("RecordOrError"))), ("continuationMarker", string)], required: ["records"])
        ),
        (
            "RecordsChangesRequest",
            object(
                [
                    ("zoneID", ref("ZoneID")), ("syncToken", string), ("resultsLimit", integer), ("desiredKeys", strings),
                    ("numbersAsStrings", boolean),
                ], required: ["zoneID"])
        ),
        (
            "Zone",
            notAnError(
                object(
                    [("zoneID", ref("ZoneID")), ("syncToken", string), ("atomic", boolean), ("deleted", boolean)],
                    required: ["zoneID"]))
        ),
        (
            "ZoneOrError",
            [
                "oneOf": [
                    ref("Zone"),
                    object(
                        [("zoneID", ref("ZoneID")), ("reason", string), ("serverErrorCode", string), ("uuid", string)],
                        required: ["zoneID", "serverErrorCode"]),
                ]
            ]
        ),
        ("ZonesResponse", object([("zones", array(of: ref("ZoneOrError")))], required: ["zones"])),
        ("ZonesLookupRequest", object([("zones", array(of: ref("Zone")))], required: ["zones"])),
        (
            "ZonesModifyRequest",
            object(
                [
                    (
                        "operations",
                        array(
                            of: object(
                                [("operationType", ["type": "string", "enum": ["create", "delete"]]), ("zone", ref("Zone"))],
                                required: ["operationType", "zone"]))
                    )
                ], required: ["operations"])
        ),
        ("DatabaseChangesRequest", object([("syncToken", string), ("resultsLimit", integer)], required: [])),
        (
            "DatabaseChangesResponse",
            object(
                [("zones", array(of: ref("Zone"))), ("syncToken", string), ("moreComing", boolean)],
                required: ["zones", "syncToken", "moreComing"])
        ),
        (
            "ZoneChangesRequest",
            object(
                [
                    (
                        "zones",
                        array(
                            of: object(
                                [
                                    ("zoneID", ref("ZoneID")), ("syncToken", string), ("resultsLimit", integer),
                                    ("desiredKeys", strings),
                                    ("desiredRecordTypes", strings),
                                ], required: []))
                    ), ("resultsLimit", integer), ("desiredKeys", strings), ("desiredRecordTypes", strings),
                    ("numberAsStrings", boolean), ("numbersAsStrings", boolean),
                ], required: ["zones"])
        ),
        (
            "ZoneChangesResponse",
            object(
                [
                    (
                        "zones",
                        array(
                            of: object(
                                [
                                    ("zoneID", ref("ZoneID")), ("records", array(of: ref("Record"))), ("syncToken", string),
                                    ("moreComing", boolean), ("serverErrorCode", string), ("reason", string),
                                ], required: ["zoneID"]))
                    )
                ], required: ["zones"])
        ),
        (
            "CreateServerKeyRequest",
            object([("container", string), ("publicKey", string), ("name", string)], required: ["container", "publicKey"])
        ),
        (
            "ServerKeyInfo",
            object(
                [("keyID", string), ("container", string), ("name", string), ("creator", string), ("revoked", boolean)],
                required: ["keyID", "container", "name", "creator", "revoked"])
        ),
        (
            "AssetUploadRequest",
            object(
                [
                    (
                        "tokens",
                        array(
                            of: object(
                                [("recordName", string), ("recordType", string), ("fieldName", string)],
                                required: ["recordType", "fieldName"]))
                    ),
                    ("zoneID", ref("ZoneID")),
                ], required: ["tokens"])
        ),
        (
            "AssetUploadResponse",
            object(
                [
                    (
                        "tokens",
                        array(
                            of: object(
                                [("recordName", string), ("fieldName", string), ("url", string)], required: ["fieldName", "url"]))
                    )
                ], required: ["tokens"])
        ),
        (
            "AssetUploadResult",
            object(
                [
                    (
                        "singleFile",
                        object(
                            [("fileChecksum", string), ("size", integer), ("receipt", string)],
                            required: ["fileChecksum", "size", "receipt"])
                    )
                ],
                required: ["singleFile"])
        ),
        (
            "AcceptSharesRequest",
            object([("shortGUIDs", array(of: object([("value", string)], required: ["value"])))], required: ["shortGUIDs"])
        ),
        ("SchemaDocument", object([("text", string)], required: ["text"])),
        ("RoleMemberRequest", object([("email", string)], required: ["email"])),
        (
            "RoleList",
            object(
                [
                    (
                        "items",
                        [
                            "type": "array",
                            "items": object(
                                [
                                    ("role", string),
                                    (
                                        "members",
                                        [
                                            "type": "array",
                                            "items": object([("userRecordName", string), ("email", string)], required: []),
                                        ]
                                    ),
                                ], required: ["role", "members"]),
                        ]
                    )
                ], required: ["items"])
        ),
        ("SchemaDeployRequest", object([("dryRun", boolean)], required: [])),
        (
            "SchemaDeployResponse",
            object(
                [("changes", strings), ("violations", strings), ("deployed", boolean)],
                required: ["changes", "violations", "deployed"])
        ),
        (
            "Subscription",
            object(
                [
                    ("subscriptionID", string), ("subscriptionType", ["type": "string", "enum": ["query", "zone", "database"]]),
                    ("query", anyValue), ("zoneID", ref("ZoneID")), ("zoneWide", boolean),
                    ("firesOn", array(of: ["type": "string", "enum": ["create", "update", "delete"]])), ("firesOnce", boolean),
                    ("notificationInfo", anyValue),
                ], required: ["subscriptionID", "subscriptionType"])
        ),
        (
            "SubscriptionsModifyRequest",
            object(
                [
                    (
                        "operations",
                        array(
                            of: object(
                                [
                                    ("operationType", ["type": "string", "enum": ["create", "update", "delete"]]),
                                    ("subscription", ref("Subscription")),
                                ],
                                required: ["operationType", "subscription"]))
                    )
                ], required: ["operations"])
        ),
        (
            "SubscriptionsLookupRequest",
            object(
                [("subscriptions", array(of: object([("subscriptionID", string)], required: ["subscriptionID"])))],
                required: ["subscriptions"])
        ),
        ("SubscriptionsResponse", object([("subscriptions", array(of: anyValue))], required: ["subscriptions"])),
        ("LookupInfo", object([("emailAddress", string), ("phoneNumber", string), ("userRecordName", string)], required: [])),
        (
            "UserIdentity",
            object(
                [
                    ("userRecordName", string), ("lookupInfo", ref("LookupInfo")),
                    ("nameComponents", object([("givenName", string), ("familyName", string)], required: [])),
                ], required: ["userRecordName"])
        ),
        ("UsersResponse", object([("users", array(of: ref("UserIdentity")))], required: ["users"])),
        ("UsersDiscoverRequest", object([("lookupInfos", array(of: ref("LookupInfo")))], required: ["lookupInfos"])),
        (
            "CurrentUserResponse",
            object([("userRecordName", string), ("firstName", string), ("lastName", string)], required: ["userRecordName"])
        ),
        (
            "UsersLookupRequest",
            object(
                [("users", array(of: object([("emailAddress", string), ("userRecordName", string)], required: [])))],
                required: ["users"])
        ),
        (
            "LegacyUsersResponse",
            object(
                [
                    (
                        "users",
                        array(
                            of: object(
                                [
                                    ("userRecordName", string), ("firstName", string), ("lastName", string),
                                    ("emailAddress", string),
                                ], required: ["userRecordName"]))
                    )
                ], required: ["users"])
        ),
        (
            "AssetRereferenceRequest",
            object(
                [
                    (
                        "assets",
                        array(
                            of: object([("recordName", string), ("fieldName", string)], required: ["recordName", "fieldName"]))
                    ), ("zoneID", ref("ZoneID")),
                ],
                required: ["assets"])
        ),
        (
            "AssetRereferenceResponse",
            object(
                [
                    (
                        "assets",
                        array(
                            of: [
                                "oneOf": [
                                    object(
                                        [("recordName", string), ("fieldName", string), ("value", anyValue), ("type", string)],
                                        required: ["recordName", "fieldName", "value", "type"]),
                                    ref("RecordError"),
                                ]
                            ])
                    )
                ], required: ["assets"])
        ),
        (
            "TokensCreateRequest",
            object([("apnsEnvironment", ["type": "string", "enum": ["development", "production"]])], required: [])
        ),
        (
            "TokensCreateResponse",
            object(
                [("apnsEnvironment", string), ("apnsToken", string), ("webcourierURL", string)],
                required: ["apnsEnvironment", "apnsToken", "webcourierURL"])
        ),
        (
            "TokensRegisterRequest",
            object(
                [("apnsEnvironment", ["type": "string", "enum": ["development", "production"]]), ("apnsToken", string)],
                required: ["apnsToken"])
        ),
        (
            "TokensRegisterResponse",
            object([("apnsEnvironment", string), ("apnsToken", string)], required: ["apnsEnvironment", "apnsToken"])
        ),
        (
            "RecordNotification",
            object(
                [
                    ("notificationType", ["type": "string", "enum": ["query", "recordZone", "database"]]),
                    ("subscriptionID", string),
                    ("containerIdentifier", string), ("environment", string), ("databaseScope", string),
                    ("zoneID", ref("ZoneID")),
                    ("recordName", string), ("queryNotificationReason", string), ("notificationInfo", anyValue),
                ],
                required: ["notificationType", "subscriptionID", "containerIdentifier", "environment", "databaseScope", "zoneID"])
        ),
    ]
}
