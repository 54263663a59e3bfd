import Foundation
import NimbusCore

/// The key-value routes of the wire protocol, one call each. `UbiquitousKeyValueStore` builds on it;
/// use it directly for scripts and tools that need no local copy.
public struct KeyValueClient: Sendable {
    public let client: NimbusClient
    public let storeIdentifier: String

    private let base: String

    public init(client: NimbusClient, storeIdentifier: String) {
        self.client = client
        self.storeIdentifier = storeIdentifier
        let escaped = storeIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"]))
        base = "/kv/1/" + (escaped ?? storeIdentifier)
    }

    public func values() async throws -> KeyValueSnapshot {
        try await client.send(.GET, base + "/values")
    }

    public func changes(since syncToken: String?, resultsLimit: Int? = nil) async throws -> KeyValueChangesResponse {
        try await client.send(
            .POST, base + "/changes", body: KeyValueChangesRequest(syncToken: syncToken, resultsLimit: resultsLimit))
    }

    public func modify(_ operations: [KeyValueOperation]) async throws -> KeyValueModifyResponse {
        try await client.send(
            .POST, base + "/modify", body: KeyValueModifyRequest(operations: operations).encoded(),
            decode: KeyValueModifyResponse.decode)
    }
}
