/// An error with a stable wire code, as the server answers it and as the SDK throws it.
///
/// ```swift
/// do { try await store.modify(...) }
/// catch let error as NimbusError where error.code == .kvLimitExceeded { ... }
/// ```
public struct NimbusError: Error, Hashable, Codable, Sendable, CustomStringConvertible {
    /// Unique id of this occurrence; the server logs it, so a user can quote it.
    public var uuid: String
    public var code: ErrorCode
    /// What went wrong and, where possible, how to fix it.
    public var reason: String
    /// Seconds to wait before retrying, on `THROTTLED` and `TRY_AGAIN_LATER`.
    public var retryAfter: Int?
    /// Where to sign in, on `AUTHENTICATION_REQUIRED`.
    public var redirectURL: String?
    /// Which limit was hit, on `KV_LIMIT_EXCEEDED` (one of `KeyValueLimits.Limit`).
    public var limit: String?

    public init(
        _ code: ErrorCode, _ reason: String, retryAfter: Int? = nil, redirectURL: String? = nil,
        limit: String? = nil, uuid: String? = nil
    ) {
        self.uuid = uuid ?? UUIDString.random()
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
        self.redirectURL = redirectURL
        self.limit = limit
    }

    public var description: String { "\(code): \(reason)" }

    enum CodingKeys: String, CodingKey {
        case uuid, code = "serverErrorCode", reason, retryAfter, redirectURL, limit
    }
}

extension NimbusError {
    public static func badRequest(_ reason: String) -> NimbusError { NimbusError(.badRequest, reason) }
    public static func accessDenied(_ reason: String) -> NimbusError { NimbusError(.accessDenied, reason) }
    public static func notFound(_ reason: String) -> NimbusError { NimbusError(.notFound, reason) }
    public static func authenticationFailed(_ reason: String) -> NimbusError {
        NimbusError(.authenticationFailed, reason)
    }
}
