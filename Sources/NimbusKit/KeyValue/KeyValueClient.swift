import Foundation
import NimbusCore

/// The key-value routes of the wire protocol, one call each. `UbiquitousKeyValueStore` builds on it;
/// the CLI and the benchmarks use it directly.
package struct KeyValueClient: Sendable {
    package let client: NimbusClient
    package let storeIdentifier: String

    private let base: String

    package init(client: NimbusClient, storeIdentifier: String) {
        self.client = client
        self.storeIdentifier = storeIdentifier
        let escaped = storeIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"]))
        base = "/kv/1/" + (escaped ?? storeIdentifier)
    }

    package func values() async throws -> KeyValueSnapshot {
        try await client.send(.GET, base + "/values")
    }

    package func changes(since syncToken: String?, resultsLimit: Int? = nil) async throws -> KeyValueChangesResponse {
        try await client.send(
            .POST, base + "/changes", body: KeyValueChangesRequest(syncToken: syncToken, resultsLimit: resultsLimit))
    }

    package func modify(_ operations: [KeyValueOperation]) async throws -> KeyValueModifyResponse {
        try await client.send(
            .POST, base + "/modify", body: KeyValueModifyRequest(operations: operations).encoded(),
            decode: KeyValueModifyResponse.decode)
    }
}
