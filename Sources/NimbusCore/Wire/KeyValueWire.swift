/// One write in a key-value batch: set `key` to `value`, or remove it when `value` is nil.
package struct KeyValueOperation: Hashable, Codable, Sendable {
    package var key: String
    package var value: KeyValue?

    package init(key: String, value: KeyValue?) {
        self.key = key
        self.value = value
    }

    package static func set(_ key: String, _ value: KeyValue) -> Self { .init(key: key, value: value) }
    package static func remove(_ key: String) -> Self { .init(key: key, value: nil) }

    enum CodingKeys: String, CodingKey { case operationType, key, value }

    package init(from decoder: any Decoder) throws {
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

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value == nil ? "remove" : "set", forKey: .operationType)
        try container.encode(key, forKey: .key)
        try container.encodeIfPresent(value, forKey: .value)
    }
}

/// `POST /kv/1/{store}/modify`: an atomic batch; later operations on the same key win.
package struct KeyValueModifyRequest: Codable, Sendable {
    package var operations: [KeyValueOperation]
    package init(operations: [KeyValueOperation]) { self.operations = operations }
}

/// The answer to a modify: the store's new change token and sequence.
package struct KeyValueModifyResponse: Codable, Sendable {
    package var syncToken: String
    package var sequence: Int64
    package init(syncToken: String, sequence: Int64) {
        self.syncToken = syncToken
        self.sequence = sequence
    }
}

/// `POST /kv/1/{store}/changes`: what changed since a token (nil: from the beginning).
package struct KeyValueChangesRequest: Codable, Sendable {
    package var syncToken: String?
    package var resultsLimit: Int?
    package init(syncToken: String?, resultsLimit: Int? = nil) {
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
    }
}

/// One changed key: its latest value, or `deleted` when it was removed.
package struct KeyValueChange: Hashable, Codable, Sendable {
    package var key: String
    package var value: KeyValue?
    package var deleted: Bool
    package var sequence: Int64
    package init(key: String, value: KeyValue?, sequence: Int64) {
        self.key = key
        self.value = value
        self.deleted = value == nil
        self.sequence = sequence
    }
}

package struct KeyValueChangesResponse: Codable, Sendable {
    package var changes: [KeyValueChange]
    package var syncToken: String
    /// When true, ask again at once with the new token.
    package var moreComing: Bool
    package init(changes: [KeyValueChange], syncToken: String, moreComing: Bool) {
        self.changes = changes
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// `GET /kv/1/{store}/values`: the whole store at one sequence.
package struct KeyValueSnapshot: Codable, Sendable {
    package var values: [String: KeyValue]
    package var syncToken: String
    package init(values: [String: KeyValue], syncToken: String) {
        self.values = values
        self.syncToken = syncToken
    }
}
