/// A stable error code that crosses the wire as `serverErrorCode`.
///
/// The CloudKit Web Services codes come first, with the HTTP statuses CloudKit uses; Nimbus adds
/// its own codes where CloudKit has none. Codes are never renamed once shipped: clients match on them.
public struct ErrorCode: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let accessDenied = ErrorCode(rawValue: "ACCESS_DENIED")
    public static let atomicError = ErrorCode(rawValue: "ATOMIC_ERROR")
    public static let authenticationFailed = ErrorCode(rawValue: "AUTHENTICATION_FAILED")
    public static let authenticationRequired = ErrorCode(rawValue: "AUTHENTICATION_REQUIRED")
    public static let badRequest = ErrorCode(rawValue: "BAD_REQUEST")
    public static let conflict = ErrorCode(rawValue: "CONFLICT")
    public static let exists = ErrorCode(rawValue: "EXISTS")
    public static let internalError = ErrorCode(rawValue: "INTERNAL_ERROR")
    public static let notFound = ErrorCode(rawValue: "NOT_FOUND")
    public static let quotaExceeded = ErrorCode(rawValue: "QUOTA_EXCEEDED")
    public static let throttled = ErrorCode(rawValue: "THROTTLED")
    public static let tryAgainLater = ErrorCode(rawValue: "TRY_AGAIN_LATER")
    public static let validatingReferenceError = ErrorCode(rawValue: "VALIDATING_REFERENCE_ERROR")
    public static let zoneNotFound = ErrorCode(rawValue: "ZONE_NOT_FOUND")

    /// A key-value store batch would break one of the store's limits; nothing was written.
    public static let kvLimitExceeded = ErrorCode(rawValue: "KV_LIMIT_EXCEEDED")
    /// The request body is larger than the route accepts.
    public static let requestTooLarge = ErrorCode(rawValue: "REQUEST_TOO_LARGE")
    /// A change token that does not belong to this zone, or names a state the server never had.
    public static let changeTokenExpired = ErrorCode(rawValue: "CHANGE_TOKEN_EXPIRED")
    /// A record is already in a share (as a root, or inside another shared hierarchy), as CloudKit's
    /// `alreadyShared`.
    public static let alreadyShared = ErrorCode(rawValue: "ALREADY_SHARED")
    /// The HTTP method is not served on this path.
    public static let methodNotAllowed = ErrorCode(rawValue: "METHOD_NOT_ALLOWED")
    /// The request's URL is longer than the server reads.
    public static let uriTooLong = ErrorCode(rawValue: "URI_TOO_LONG")
    /// The request's headers are larger, or more, than the server reads.
    public static let headersTooLarge = ErrorCode(rawValue: "HEADERS_TOO_LARGE")
    /// A document version names a chunk the caller never uploaded; upload it and save again.
    public static let chunkMissing = ErrorCode(rawValue: "CHUNK_MISSING")
    /// An uploaded chunk's bytes do not hash to the name it was sent under; nothing was stored. A client that
    /// read the bytes again after hashing them (a large file's upload) learns that the file changed meanwhile.
    public static let chunkMismatch = ErrorCode(rawValue: "CHUNK_MISMATCH")
    /// A `Range` header asks only for bytes past the end of the body.
    public static let rangeNotSatisfiable = ErrorCode(rawValue: "RANGE_NOT_SATISFIABLE")
    /// A condition the request set (`If-Match`, `If-None-Match`, WebDAV's `If`, `Overwrite: F`) does not hold:
    /// nothing was changed.
    public static let preconditionFailed = ErrorCode(rawValue: "PRECONDITION_FAILED")
    /// A WebDAV lock holds the resource and the request did not submit its token.
    public static let locked = ErrorCode(rawValue: "LOCKED")
    /// The path is a WebSocket; the request must ask to upgrade to one.
    public static let upgradeRequired = ErrorCode(rawValue: "UPGRADE_REQUIRED")

    /// Lets callers write `catch ErrorCode.kvLimitExceeded` for a `NimbusError` with that code.
    public static func ~= (code: ErrorCode, error: any Error) -> Bool {
        (error as? NimbusError)?.code == code
    }

    /// Client side only: the server could not be reached. Writes stay pending and are retried.
    public static let networkUnavailable = ErrorCode(rawValue: "NETWORK_UNAVAILABLE")

    /// The HTTP status this code is answered with.
    public var httpStatus: Int {
        switch self {
        case .accessDenied: 403
        case .atomicError, .badRequest, .chunkMismatch: 400
        case .authenticationFailed: 401
        case .authenticationRequired: 421
        case .conflict, .exists, .alreadyShared: 409
        case .notFound, .zoneNotFound: 404
        case .quotaExceeded, .kvLimitExceeded, .requestTooLarge: 413
        case .throttled: 429
        case .tryAgainLater: 503
        case .validatingReferenceError, .chunkMissing, .preconditionFailed: 412
        case .locked: 423
        case .changeTokenExpired: 410
        case .methodNotAllowed: 405
        case .uriTooLong: 414
        case .headersTooLarge: 431
        case .upgradeRequired: 426
        case .rangeNotSatisfiable: 416
        default: 500
        }
    }
}
