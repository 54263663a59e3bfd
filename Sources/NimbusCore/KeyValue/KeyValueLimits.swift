/// The key-value store's limits, the same as iCloud's: 1024 keys, 1 MiB of values in total,
/// 1 MiB per value, keys of at most 64 bytes of UTF-8. Key bytes do not count toward the totals.
public struct KeyValueLimits: Hashable, Sendable {
    public var maxKeys: Int
    public var maxTotalBytes: Int
    public var maxValueBytes: Int
    public var maxKeyBytes: Int

    public init(maxKeys: Int = 1024, maxTotalBytes: Int = 1 << 20, maxValueBytes: Int = 1 << 20, maxKeyBytes: Int = 64) {
        self.maxKeys = maxKeys
        self.maxTotalBytes = maxTotalBytes
        self.maxValueBytes = maxValueBytes
        self.maxKeyBytes = maxKeyBytes
    }

    public static let iCloud = KeyValueLimits()

    /// The name of a limit, as sent in the `limit` field of a `KV_LIMIT_EXCEEDED` error.
    public enum Limit: String, Sendable {
        case keyCount, totalBytes, valueBytes, keyBytes
    }

    /// Checks what can be checked without the store's current contents: key and value sizes.
    package func validate(_ operations: [KeyValueOperation]) throws(NimbusError) {
        for operation in operations {
            if operation.key.isEmpty {
                throw NimbusError(.badRequest, "a key must not be empty")
            }
            if operation.key.utf8.count > maxKeyBytes {
                throw Self.error(
                    .keyBytes,
                    "key \"\(operation.key.prefix(80))\" is \(operation.key.utf8.count) bytes of UTF-8; keys are limited to \(maxKeyBytes)"
                )
            }
            if let value = operation.value, value.byteSize > maxValueBytes {
                throw Self.error(
                    .valueBytes,
                    "the value for key \"\(operation.key)\" is \(value.byteSize) bytes; values are limited to \(maxValueBytes)")
            }
        }
    }

    /// Checks the totals the store would hold after a batch.
    public func validateTotals(keys: Int, bytes: Int) throws(NimbusError) {
        if keys > maxKeys {
            throw Self.error(.keyCount, "the batch would leave \(keys) keys in the store; a store holds at most \(maxKeys)")
        }
        if bytes > maxTotalBytes {
            throw Self.error(
                .totalBytes, "the batch would leave \(bytes) bytes of values in the store; a store holds at most \(maxTotalBytes)"
            )
        }
    }

    static func error(_ limit: Limit, _ reason: String) -> NimbusError {
        NimbusError(.kvLimitExceeded, reason + "; nothing was changed", limit: limit.rawValue)
    }
}
