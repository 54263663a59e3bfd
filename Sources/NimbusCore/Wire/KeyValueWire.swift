/// One write in a key-value batch: set `key` to `value`, or remove it when `value` is nil.
public struct KeyValueOperation: Hashable, Codable, Sendable {
    public var key: String
    public var value: KeyValue?

    public init(key: String, value: KeyValue?) {
        self.key = key
        self.value = value
    }

    public static func set(_ key: String, _ value: KeyValue) -> Self { .init(key: key, value: value) }
    public static func remove(_ key: String) -> Self { .init(key: key, value: nil) }

    enum CodingKeys: String, CodingKey { case operationType, key, value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decode(String.self, forKey: .key)
        switch try container.decode(String.self, forKey: .operationType) {
        case "set": value = try container.decode(KeyValue.self, forKey: .value)
        case "remove": value = nil
        case let other:
            throw DecodingError.dataCorruptedError(
                forKey: .operationType, in: container,
                debugDescription: "unknown operationType \"\(other)\"; expected set or remove")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value == nil ? "remove" : "set", forKey: .operationType)
        try container.encode(key, forKey: .key)
        try container.encodeIfPresent(value, forKey: .value)
    }
}

/// `POST /kv/1/{store}/modify`: an atomic batch; later operations on the same key win.
public struct KeyValueModifyRequest: Codable, Sendable {
    public var operations: [KeyValueOperation]
    public init(operations: [KeyValueOperation]) { self.operations = operations }
}

/// The answer to a modify: the store's new change token and sequence.
public struct KeyValueModifyResponse: Codable, Sendable {
    public var syncToken: String
    public var sequence: Int64
    public init(syncToken: String, sequence: Int64) {
        self.syncToken = syncToken
        self.sequence = sequence
    }
}

/// `POST /kv/1/{store}/changes`: what changed since a token (nil: from the beginning).
public struct KeyValueChangesRequest: Codable, Sendable {
    public var syncToken: String?
    public var resultsLimit: Int?
    public init(syncToken: String?, resultsLimit: Int? = nil) {
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
    }
}

/// One changed key: its latest value, or `deleted` when it was removed.
public struct KeyValueChange: Hashable, Codable, Sendable {
    public var key: String
    public var value: KeyValue?
    public var deleted: Bool
    public var sequence: Int64
    public init(key: String, value: KeyValue?, sequence: Int64) {
        self.key = key
        self.value = value
        self.deleted = value == nil
        self.sequence = sequence
    }
}

public struct KeyValueChangesResponse: Codable, Sendable {
    public var changes: [KeyValueChange]
    public var syncToken: String
    /// When true, ask again at once with the new token.
    public var moreComing: Bool
    public init(changes: [KeyValueChange], syncToken: String, moreComing: Bool) {
        self.changes = changes
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// `GET /kv/1/{store}/values`: the whole store at one sequence.
public struct KeyValueSnapshot: Codable, Sendable {
    public var values: [String: KeyValue]
    public var syncToken: String
    public init(values: [String: KeyValue], syncToken: String) {
        self.values = values
        self.syncToken = syncToken
    }
}
