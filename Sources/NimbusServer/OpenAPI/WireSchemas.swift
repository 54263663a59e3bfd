/// JSON Schemas of the wire types in `NimbusCore`, for the OpenAPI document.
enum WireSchemas {
    static func object(_ properties: [(String, JSONValue)], required: [String]) -> JSONValue {
        ["type": "object", "properties": .object(properties), "required": .array(required.map { .string($0) })]
    }

    /// `schema` that does not validate an error item (one with `serverErrorCode`), so that `oneOf` an
    /// item and its error picks exactly one.
    static func notAnError(_ schema: JSONValue) -> JSONValue {
        guard case .object(let members) = schema else { return schema }
        return .object(members + [("not", ["required": ["serverErrorCode"]])])
    }

    static let string: JSONValue = ["type": "string"]
    static let integer: JSONValue = ["type": "integer", "format": "int64"]
    static let boolean: JSONValue = ["type": "boolean"]
    static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(name)")] }
    static func array(of item: JSONValue) -> JSONValue { ["type": "array", "items": item] }

    static var all: [(String, JSONValue)] { service + database + documents }

    private static let service: [(String, JSONValue)] = [
        (
            "Error",
            object(
                [
                    ("uuid", string), ("serverErrorCode", string), ("reason", string), ("retryAfter", integer),
                    ("redirectURL", string),
                    ("limit", ["type": "string", "enum": ["keyCount", "totalBytes", "valueBytes", "keyBytes"]]),
                ], required: ["uuid", "serverErrorCode", "reason"])
        ),
        ("Health", object([("status", string)], required: ["status"])),
        ("SignUpRequest", object([("email", string), ("password", string)], required: ["email", "password"])),
        ("SignUpResponse", object([("userRecordName", string)], required: ["userRecordName"])),
        (
            "SignInRequest",
            object(
                [("email", string), ("password", string), ("deviceName", string), ("deviceID", string)],
                required: ["email", "password", "deviceName"])
        ),
        (
            "SignInResponse",
            object(
                [("sessionToken", string), ("expiresAt", integer), ("userRecordName", string), ("deviceID", string)],
                required: ["sessionToken", "expiresAt", "userRecordName", "deviceID"])
        ),
        (
            "CallerResponse",
            object(
                [("userRecordName", string), ("email", string), ("deviceID", string), ("isAdministrator", boolean)],
                required: ["userRecordName", "email", "deviceID", "isAdministrator"])
        ),
        (
            "AccountProfile",
            object(
                [("firstName", string), ("lastName", string), ("phoneNumber", string), ("discoverable", boolean)],
                required: ["discoverable"])
        ),
        ("AppPasswordRequest", object([("name", string), ("keepFinderFiles", boolean)], required: ["name"])),
        (
            "AppPassword",
            object(
                [
                    ("deviceID", string), ("name", string), ("createdAt", integer), ("password", string), ("userName", string),
                    ("keepsFinderFiles", boolean),
                ],
                required: ["deviceID", "name", "createdAt", "userName", "keepsFinderFiles"])
        ),
        ("AppPasswordList", object([("appPasswords", array(of: ref("AppPassword")))], required: ["appPasswords"])),
        ("ZoneAddress", object([("service", string), ("name", string)], required: ["service", "name"])),
        (
            "DeviceList",
            object(
                [
                    (
                        "devices",
                        array(
                            of: object(
                                [
                                    ("deviceID", string), ("name", string), ("lastSeen", integer),
                                    (
                                        "watermarks",
                                        array(
                                            of: object(
                                                [
                                                    ("zone", ref("ZoneAddress")), ("appliedSequence", integer),
                                                    ("currentSequence", integer),
                                                ],
                                                required: ["zone", "appliedSequence", "currentSequence"]))
                                    ),
                                ], required: ["deviceID", "name", "lastSeen", "watermarks"]))
                    )
                ], required: ["devices"])
        ),
        (
            "KeyValue",
            object(
                [
                    (
                        "type",
                        [
                            "type": "string",
                            "enum": ["STRING", "INT64", "DOUBLE", "BOOLEAN", "TIMESTAMP", "BYTES", "LIST", "DICTIONARY"],
                        ]
                    ),
                    (
                        "value",
                        [
                            "description":
                                "string, number, boolean, base64 (BYTES), milliseconds since 1970 (TIMESTAMP), an array of KeyValue (LIST) or an object of KeyValue (DICTIONARY)"
                        ]
                    ),
                ], required: ["type", "value"])
        ),
        (
            "KeyValueOperation",
            object(
                [
                    ("operationType", ["type": "string", "enum": ["set", "remove"]]), ("key", string), ("value", ref("KeyValue")),
                ], required: ["operationType", "key"])
        ),
        ("KeyValueModifyRequest", object([("operations", array(of: ref("KeyValueOperation")))], required: ["operations"])),
        ("KeyValueModifyResponse", object([("syncToken", string), ("sequence", integer)], required: ["syncToken", "sequence"])),
        ("KeyValueChangesRequest", object([("syncToken", string), ("resultsLimit", integer)], required: [])),
        (
            "KeyValueChangesResponse",
            object(
                [
                    (
                        "changes",
                        array(
                            of: object(
                                [("key", string), ("value", ref("KeyValue")), ("deleted", boolean), ("sequence", integer)],
                                required: ["key", "deleted", "sequence"]))
                    ),
                    ("syncToken", string), ("moreComing", boolean),
                ], required: ["changes", "syncToken", "moreComing"])
        ),
        (
            "KeyValueSnapshot",
            object(
                [("values", ["type": "object", "additionalProperties": ref("KeyValue")]), ("syncToken", string)],
                required: ["values", "syncToken"])
        ),
        ("CreateTeamRequest", object([("teamID", string), ("name", string)], required: ["name"])),
        ("Team", object([("teamID", string), ("name", string)], required: ["teamID", "name"])),
        (
            "CreateAppRequest",
            object(
                [("bundleID", string), ("teamID", string), ("keyValueStoreIdentifier", string)],
                required: ["bundleID", "teamID"])
        ),
        (
            "App",
            object(
                [
                    ("bundleID", string), ("teamID", string), ("keyValueStoreIdentifier", string),
                    ("containers", array(of: string)),
                ],
                required: ["bundleID", "teamID", "keyValueStoreIdentifier", "containers"])
        ),
        (
            "Container",
            object(
                [("identifier", string), ("teamID", string), ("packageExtensions", array(of: string))],
                required: ["identifier", "teamID"])
        ),
        ("PackageExtensionsRequest", object([("packageExtensions", array(of: string))], required: ["packageExtensions"])),
        ("EntitlementRequest", object([("container", string)], required: ["container"])),
        (
            "CreateAPITokenRequest",
            object(
                [("container", string), ("bundleID", string), ("name", string), ("allowedOrigins", array(of: string))],
                required: ["container", "bundleID"])
        ),
        (
            "APITokenInfo",
            object(
                [
                    ("tokenID", string), ("container", string), ("bundleID", string), ("name", string), ("revoked", boolean),
                    ("allowedOrigins", array(of: string)),
                ],
                required: ["tokenID", "container", "bundleID", "name", "revoked", "allowedOrigins"])
        ),
        ("CreatedAPIToken", object([("info", ref("APITokenInfo")), ("apiToken", string)], required: ["info", "apiToken"])),
    ]
}
