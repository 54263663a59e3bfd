/// The OpenAPI 3.1 description of every route, served at `/openapi.json`.
///
/// A test compares it with the routes the router actually serves, so the two cannot drift apart.
import Foundation

enum OpenAPIDocument {
    enum Access {
        case open, session, service, administrator, database

        var security: JSONValue {
            switch self {
            case .open: []
            case .session, .administrator: [["session": []]]
            case .service: [["apiToken": [], "session": []]]
            case .database: [["apiToken": [], "session": []], ["apiToken": []], ["serverKey": []]]
            }
        }

        /// The error statuses an operation of this access can answer besides those of every operation.
        var errors: [Int] {
            switch self {
            case .open: []
            case .session: [421]
            case .service: [403, 410, 421]
            case .administrator: [403, 404, 409, 421]
            case .database: [403, 404, 409, 410, 412, 421]
            }
        }
    }

    /// Error statuses any request can get: malformed (400), credentials that do not check out (401), a
    /// body over the limit (413, as signed requests' bodies are read before routing), a URL or headers over
    /// theirs (414, 431), throttling (429), and a server that cannot answer now (503: storage full,
    /// credentials unreadable).
    static let everyOperationsErrors = [400, 401, 413, 414, 429, 431, 503]

    struct Operation {
        var method: String
        var path: String
        var summary: String
        var access: Access
        var request: String? = nil
        var response: String? = nil
        var responseType = "application/json"
        /// The success status: 200, or 204 for an answer without a body.
        var status = 200
        /// Error statuses particular to this operation.
        var errors: [Int] = []
        /// Other successes, without a body (a long poll that heard nothing, a redirect).
        var emptySuccesses: [Int] = []
        /// The success may also be 206, part of the body (a `Range` request).
        var partialSuccess = false
        var requestType = "application/json"
        /// Error statuses the operation may also answer with an HTML page (a sign-in form showing why).
        var htmlErrors: [Int] = []
    }

    static let operations: [Operation] =
        [
            Operation(method: "get", path: "/health", summary: "Liveness check", access: .open, response: "Health"),
            Operation(method: "get", path: "/metrics", summary: "Prometheus metrics", access: .open, responseType: "text/plain"),
            Operation(method: "get", path: "/openapi.json", summary: "This document", access: .open),
            Operation(
                method: "post", path: "/auth/1/signup", summary: "Create an account", access: .open,
                request: "SignUpRequest", response: "SignUpResponse", errors: [409]),
            Operation(
                method: "post", path: "/auth/1/signin", summary: "Sign in and register the device", access: .open,
                request: "SignInRequest", response: "SignInResponse"),
            Operation(method: "post", path: "/auth/1/signout", summary: "Revoke the session", access: .session, status: 204),
            Operation(
                method: "get", path: "/auth/1/web/signin",
                summary: "Sign-in page that hands a web auth token to a trusted web origin",
                access: .open, responseType: "text/html"),
            Operation(
                method: "post", path: "/auth/1/web/signin",
                summary: "Sign-in form submission (application/x-www-form-urlencoded)",
                access: .open, responseType: "text/html", emptySuccesses: [303], htmlErrors: [401, 429]),
            Operation(
                method: "get", path: "/auth/1/me", summary: "The signed-in account and device", access: .session,
                response: "CallerResponse"),
            Operation(
                method: "get", path: "/auth/1/profile", summary: "The signed-in user's names, phone number and discoverability",
                access: .session, response: "AccountProfile"),
            Operation(
                method: "put", path: "/auth/1/profile", summary: "Replace the signed-in user's profile", access: .session,
                request: "AccountProfile", response: "AccountProfile"),
            Operation(
                method: "get", path: "/auth/1/devices", summary: "The account's devices and their watermarks",
                access: .session, response: "DeviceList"),
            Operation(
                method: "post", path: "/auth/1/app-passwords",
                summary: "Create an app password (HTTP Basic for WebDAV clients); the password is in this answer only",
                access: .session, request: "AppPasswordRequest", response: "AppPassword"),
            Operation(
                method: "get", path: "/auth/1/app-passwords", summary: "The account's app passwords that still sign in",
                access: .session, response: "AppPasswordList"),
            Operation(
                method: "delete", path: "/auth/1/app-passwords/{device}", summary: "Revoke an app password",
                access: .session, status: 204, errors: [404]),
            Operation(
                method: "get", path: "/push/1", summary: "WebSocket of zone-moved messages for this device",
                access: .session, status: 101, errors: [426]),
            Operation(
                method: "get", path: "/push/1/courier/{token}",
                summary: "Long poll for a web client's next notification (204 when none came in time)", access: .open,
                response: "RecordNotification", errors: [404], emptySuccesses: [204]),
            Operation(
                method: "get", path: "/kv/1/{store}/values", summary: "The whole key-value store", access: .service,
                response: "KeyValueSnapshot"),
            Operation(
                method: "post", path: "/kv/1/{store}/changes", summary: "Key-value changes since a token",
                access: .service, request: "KeyValueChangesRequest", response: "KeyValueChangesResponse"),
            Operation(
                method: "post", path: "/kv/1/{store}/modify", summary: "Set and remove keys in one atomic batch",
                access: .service, request: "KeyValueModifyRequest", response: "KeyValueModifyResponse"),
            Operation(
                method: "post", path: "/documents/1/{container}/{environment}/changes",
                summary: "The container's items changed since a token", access: .service, request: "DocumentChangesRequest",
                response: "DocumentChangesResponse"),
            Operation(
                method: "post", path: "/documents/1/{container}/{environment}/modify",
                summary: "Save, move, delete, resolve, restore and purge items (each operation whole or not at all)",
                access: .service, request: "DocumentModifyRequest", response: "DocumentModifyResponse"),
            Operation(
                method: "post", path: "/documents/1/{container}/{environment}/versions",
                summary: "An item with its version history", access: .service, request: "DocumentVersionsRequest",
                response: "DocumentVersionsResponse", errors: [404]),
            Operation(
                method: "get", path: "/documents/1/{container}/{environment}/trash", summary: "Recently Deleted",
                access: .service, response: "DocumentTrashResponse"),
            Operation(
                method: "post", path: "/blobs/1/{container}/{environment}/missing",
                summary: "Which chunks the caller must upload", access: .service, request: "ChunksMissingRequest",
                response: "ChunksMissingResponse"),
            Operation(
                method: "post", path: "/blobs/1/{container}/{environment}/upload",
                summary:
                    "Upload many chunks in one bundle: each its SHA-256 in 64 hexadecimal bytes, its size in 8 bytes big-endian, its bytes",
                access: .service, request: "ChunkBundle", status: 204, requestType: "application/octet-stream"),
            Operation(
                method: "post", path: "/blobs/1/{container}/{environment}/announce",
                summary:
                    "Tell the account's other devices which stored chunks of a large file's coming version to download now",
                access: .service, request: "ChunksAnnouncement", status: 204, errors: [412]),
            Operation(
                method: "post", path: "/blobs/1/{container}/{environment}/fetch",
                summary: "Download many chunks in one bundle, framed as uploads are", access: .service,
                request: "ChunksFetchRequest", responseType: "application/octet-stream", errors: [404]),
            Operation(
                method: "put", path: "/blobs/1/{container}/{environment}/{hash}",
                summary: "Upload a chunk, named by its SHA-256", access: .service, request: "ChunkBytes", status: 204,
                requestType: "application/octet-stream"),
            Operation(
                method: "get", path: "/blobs/1/{container}/{environment}/{hash}",
                summary: "Download a chunk, or the part a Range header asks for (206)", access: .service,
                responseType: "application/octet-stream", errors: [404, 416], partialSuccess: true),
            Operation(method: "get", path: "/admin/1/teams", summary: "List teams", access: .administrator),
            Operation(
                method: "post", path: "/admin/1/teams", summary: "Create a team", access: .administrator,
                request: "CreateTeamRequest", response: "Team"),
            Operation(method: "get", path: "/admin/1/apps", summary: "List apps", access: .administrator),
            Operation(
                method: "post", path: "/admin/1/apps", summary: "Create an app", access: .administrator,
                request: "CreateAppRequest", response: "App"),
            Operation(method: "get", path: "/admin/1/containers", summary: "List containers", access: .administrator),
            Operation(
                method: "post", path: "/admin/1/containers", summary: "Create a container", access: .administrator,
                request: "Container", response: "Container"),
            Operation(
                method: "put", path: "/admin/1/containers/{container}/packages",
                summary: "Set which folder extensions the container's documents treat as file packages",
                access: .administrator, request: "PackageExtensionsRequest", response: "Container", errors: [404]),
            Operation(
                method: "post", path: "/admin/1/apps/{bundleID}/entitlements", summary: "Entitle an app to a container",
                access: .administrator, request: "EntitlementRequest", response: "App"),
            Operation(
                method: "delete", path: "/admin/1/apps/{bundleID}/entitlements/{container}",
                summary: "Remove a container from an app's entitlements", access: .administrator, response: "App"),
            Operation(method: "get", path: "/admin/1/tokens", summary: "List API tokens", access: .administrator),
            Operation(
                method: "post", path: "/admin/1/tokens", summary: "Create an API token for an app and container",
                access: .administrator, request: "CreateAPITokenRequest", response: "CreatedAPIToken"),
            Operation(
                method: "delete", path: "/admin/1/tokens/{tokenID}", summary: "Revoke an API token",
                access: .administrator, status: 204),
            Operation(method: "get", path: "/admin/1/users", summary: "List accounts", access: .administrator),
            Operation(method: "get", path: "/admin/1/keys", summary: "List server-to-server keys", access: .administrator),
            Operation(
                method: "post", path: "/admin/1/keys", summary: "Register a server-to-server key (EC P-256 public key, PEM)",
                access: .administrator, request: "CreateServerKeyRequest", response: "ServerKeyInfo"),
            Operation(
                method: "delete", path: "/admin/1/keys/{keyID}", summary: "Revoke a server-to-server key", access: .administrator,
                status: 204),
            Operation(
                method: "get", path: "/admin/1/containers/{container}/schema/{environment}",
                summary: "A container environment's schema as CloudKit schema text", access: .administrator,
                response: "SchemaDocument"),
            Operation(
                method: "put", path: "/admin/1/containers/{container}/schema/{environment}",
                summary: "Import a schema into development (additions only)", access: .administrator, request: "SchemaDocument",
                response: "SchemaDocument"),
            Operation(
                method: "get", path: "/admin/1/containers/{container}/roles/{environment}",
                summary: "A container environment's custom security roles and their members", access: .administrator,
                response: "RoleList"),
            Operation(
                method: "post", path: "/admin/1/containers/{container}/roles/{environment}/{role}/members",
                summary: "Give a custom security role to the account with an email address", access: .administrator,
                request: "RoleMemberRequest", response: "RoleList"),
            Operation(
                method: "delete", path: "/admin/1/containers/{container}/roles/{environment}/{role}/members/{userRecordName}",
                summary: "Take a custom security role from an account", access: .administrator, status: 204),
            Operation(
                method: "post", path: "/admin/1/containers/{container}/schema/deploy",
                summary: "Deploy the development schema to production (additive only)", access: .administrator,
                request: "SchemaDeployRequest", response: "SchemaDeployResponse"),
            Operation(
                method: "post", path: "/assets/1/upload/{id}",
                summary: "Upload an asset's bytes to a URL from assets/upload (15 minutes)",
                access: .open, response: "AssetUploadResult", errors: [404]),
            Operation(
                method: "get", path: "/assets/1/download/{assetID}",
                summary: "Download an asset by a signed URL from a fetched record",
                access: .open, responseType: "application/octet-stream", errors: [403, 404]),
        ] + databaseOperations

    /// CloudKit Web Services' record database, under `/database/1/{container}/{environment}/{database}`.
    static let databaseOperations: [Operation] =
        [
            ("post", "records/modify", "Create, update, replace and delete records", "RecordsModifyRequest", "RecordsResponse"),
            ("post", "records/lookup", "Fetch records by name", "RecordsLookupRequest", "RecordsResponse"),
            ("post", "records/query", "Query records of a type", "RecordsQueryRequest", "RecordsQueryResponse"),
            ("post", "records/changes", "One zone's record changes since a token", "RecordsChangesRequest", "RecordsResponse"),
            ("post", "records/accept", "Accept shares by shortGUID (shared database)", "AcceptSharesRequest", "ZonesResponse"),
            ("post", "assets/upload", "Upload URLs for asset fields", "AssetUploadRequest", "AssetUploadResponse"),
            ("get", "zones/list", "The database's zones", nil, "ZonesResponse"),
            ("post", "zones/lookup", "Fetch zones by name", "ZonesLookupRequest", "ZonesResponse"),
            ("post", "zones/modify", "Create and delete zones", "ZonesModifyRequest", "ZonesResponse"),
            (
                "post", "zones/changes", "Zones changed since a database token", "DatabaseChangesRequest",
                "DatabaseChangesResponse"
            ),
            (
                "post", "changes/database", "Zones changed since a database token", "DatabaseChangesRequest",
                "DatabaseChangesResponse"
            ),
            (
                "post", "changes/zone", "Record changes of several zones since their tokens", "ZoneChangesRequest",
                "ZoneChangesResponse"
            ),
            ("get", "subscriptions/list", "The caller's subscriptions", nil, "SubscriptionsResponse"),
            ("post", "subscriptions/lookup", "Fetch subscriptions by ID", "SubscriptionsLookupRequest", "SubscriptionsResponse"),
            (
                "post", "subscriptions/modify", "Create, update and delete subscriptions", "SubscriptionsModifyRequest",
                "SubscriptionsResponse"
            ),
            (
                "post", "assets/rereference", "Fresh receipts for asset files records hold", "AssetRereferenceRequest",
                "AssetRereferenceResponse"
            ),
            ("get", "users/caller", "The signed-in user's identity", nil, "UsersResponse"),
            (
                "get", "users/current", "The signed-in user's record name and names (older form of users/caller)", nil,
                "CurrentUserResponse"
            ),
            (
                "post", "users/discover", "Discoverable users by email, phone number or record name", "UsersDiscoverRequest",
                "UsersResponse"
            ),
            ("get", "users/discover", "Every discoverable user", nil, "UsersResponse"),
            ("post", "users/lookup/email", "Discoverable users by email (legacy)", "UsersLookupRequest", "LegacyUsersResponse"),
            (
                "post", "users/lookup/id", "Discoverable users by record name (legacy)", "UsersLookupRequest",
                "LegacyUsersResponse"
            ),
        ].map { method, operation, summary, request, response in
            Operation(
                method: method, path: "/database/1/{container}/{environment}/{database}/" + operation, summary: summary,
                access: .database, request: request, response: response)
        }
        + [
            (
                "create", "A push token and web courier URL for this user's notifications", "TokensCreateRequest",
                "TokensCreateResponse"
            ),
            (
                "register", "Deliver this user's notifications to a token from tokens/create", "TokensRegisterRequest",
                "TokensRegisterResponse"
            ),
        ].map { operation, summary, request, response in
            Operation(
                method: "post", path: "/database/1/{container}/{environment}/tokens/" + operation, summary: summary,
                access: .database,
                request: request, response: response)
        }

    /// Built once: every test server's conformance check reads it, and building it takes a while.
    static let document: JSONValue = makeDocument()

    private static func makeDocument() -> JSONValue {
        var paths = [(String, JSONValue)]()
        for path in orderedPaths {
            let members: [(String, JSONValue)] = operations.filter { $0.path == path }.map { ($0.method, describe($0)) }
            paths.append((path, .object(members)))
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "Nimbus", "version": "1",
                "description": "A self-hostable iCloud: key-value store, documents and records.",
            ],
            "paths": .object(paths),
            "components": [
                "securitySchemes": [
                    "session": [
                        "type": "http", "scheme": "bearer",
                        "description": "Session token from /auth/1/signin (or ckWebAuthToken)",
                    ],
                    "apiToken": [
                        "type": "apiKey", "in": "header", "name": "X-Nimbus-API-Token",
                        "description": "An app's API token for a container (or the ckAPIToken query parameter)",
                    ],
                    "serverKey": [
                        "type": "apiKey", "in": "header", "name": "X-Apple-CloudKit-Request-KeyID",
                        "description":
                            "A server-to-server key, with X-Apple-CloudKit-Request-ISO8601Date and X-Apple-CloudKit-Request-SignatureV1 signing date, body and path (public database)",
                    ],
                ],
                "schemas": .object(WireSchemas.all),
            ],
        ]
    }

    /// The document as served: JSON with `$ref` paths left readable.
    static func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return try encoder.encode(document)
    }

    private static var orderedPaths: [String] {
        var seen = Set<String>()
        return operations.map(\.path).filter { seen.insert($0).inserted }
    }

    /// Values a path parameter takes when they form a closed set.
    static let parameterValues: [String: [String]] = [
        "environment": ["development", "production"], "database": ["private", "public", "shared"],
    ]

    private static func describe(_ operation: Operation) -> JSONValue {
        var members: [(String, JSONValue)] = [("summary", .string(operation.summary)), ("security", operation.access.security)]
        let parameters = operation.path.split(separator: "/").filter { $0.hasPrefix("{") }.map { segment -> JSONValue in
            let name = String(segment.dropFirst().dropLast())
            let schema: JSONValue =
                parameterValues[name].map { ["type": "string", "enum": .array($0.map { .string($0) })] } ?? ["type": "string"]
            return ["name": .string(name), "in": "path", "required": true, "schema": schema]
        }
        if !parameters.isEmpty { members.append(("parameters", .array(parameters))) }
        if let request = operation.request {
            members.append(
                ("requestBody", ["required": true, "content": [operation.requestType: ["schema": reference(request)]]]))
        }
        let success: JSONValue =
            operation.response.map {
                ["description": "Success", "content": [operation.responseType: ["schema": reference($0)]]]
            }
            ?? (operation.responseType == "application/json"
                ? ["description": "Success"]
                : ["description": "Success", "content": [operation.responseType: [:]]])
        var responses: [(String, JSONValue)] = [(String(operation.status), success)]
        if operation.partialSuccess { responses.append(("206", success)) }
        for status in operation.emptySuccesses {
            responses.append((String(status), ["description": "Success, with nothing to answer"]))
        }
        let errors = Set(everyOperationsErrors + operation.access.errors + operation.errors).sorted()
        for status in errors {
            var content: [(String, JSONValue)] = [("application/json", ["schema": reference("Error")])]
            if operation.htmlErrors.contains(status) { content.append(("text/html", [:])) }
            responses.append((String(status), ["description": .string(errorDescription(status)), "content": .object(content)]))
        }
        members.append(("responses", .object(responses)))
        return .object(members)
    }

    private static func errorDescription(_ status: Int) -> String {
        switch status {
        case 400: "BAD_REQUEST: malformed or invalid; CHUNK_MISMATCH: a chunk's bytes do not hash to its name"
        case 401: "AUTHENTICATION_FAILED: credentials sent do not check out"
        case 403: "ACCESS_DENIED"
        case 404: "NOT_FOUND or ZONE_NOT_FOUND"
        case 405: "METHOD_NOT_ALLOWED"
        case 409: "CONFLICT or EXISTS"
        case 410: "CHANGE_TOKEN_EXPIRED"
        case 412: "VALIDATING_REFERENCE_ERROR, CHUNK_MISSING or PRECONDITION_FAILED"
        case 413: "REQUEST_TOO_LARGE, QUOTA_EXCEEDED or KV_LIMIT_EXCEEDED"
        case 414: "URI_TOO_LONG"
        case 421: "AUTHENTICATION_REQUIRED, with redirectURL"
        case 426: "UPGRADE_REQUIRED: a WebSocket path asked for without an upgrade"
        case 429: "THROTTLED, with retryAfter"
        case 431: "HEADERS_TOO_LARGE"
        case 503: "TRY_AGAIN_LATER, with retryAfter"
        default: "Error"
        }
    }

    private static func reference(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(name)")] }
}
