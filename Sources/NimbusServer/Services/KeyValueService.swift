import Foundation
import NimbusCore
import NimbusStore

/// The iCloud key-value store: one zone per (account, store identifier), last writer wins in server
/// arrival order, iCloud's limits enforced on every batch.
struct KeyValueService: Sendable {
    let server: ServerState

    static let maxOperationsPerBatch = 1024
    static let maxChangesPerPage = 1000

    /// Checks that the calling app's entitlements name this store.
    func authorize(_ context: ServiceRequestContext, store identifier: String) throws -> ZoneKey {
        try Identifiers.validateStoreIdentifier(identifier)
        try context.appCredential.requireEntitlement()
        let app = context.appCredential.app
        guard app.keyValueStoreIdentifier == identifier else {
            throw NimbusError.accessDenied(
                "app \(app.bundleID) is entitled to key-value store \(app.keyValueStoreIdentifier), not \(identifier)")
        }
        return ZoneKey(accountID: context.session.accountID, address: ZoneAddress(service: .keyValue, name: identifier))
    }

    func snapshot(_ zone: ZoneKey) async throws -> KeyValueSnapshot {
        let (entries, state) = try await server.store.liveEntries(zone)
        var values = [String: KeyValue]()
        for entry in entries {
            values[entry.key] = try entry.payload.map(KeyValue.decode)
        }
        return KeyValueSnapshot(values: values, syncToken: (state?.token ?? ChangeToken(zoneID: 0, sequence: 0)).encoded)
    }

    func changes(_ zone: ZoneKey, _ request: KeyValueChangesRequest) async throws -> KeyValueChangesResponse {
        let page = try await server.store.changes(
            zone, since: request.syncToken, resultsLimit: request.resultsLimit, maxPerPage: Self.maxChangesPerPage)
        let changes = try page.entries.map { entry in
            KeyValueChange(key: entry.key, value: try entry.payload.map(KeyValue.decode), sequence: entry.sequence)
        }
        // The token comes from the same read as the page, so a zone created in between (a first write
        // racing a first fetch) still yields a token of that zone.
        return KeyValueChangesResponse(changes: changes, syncToken: page.token.encoded, moreComing: page.moreComing)
    }

    func modify(_ zone: ZoneKey, _ request: KeyValueModifyRequest) async throws -> KeyValueModifyResponse {
        guard !request.operations.isEmpty else { throw NimbusError.badRequest("operations must not be empty") }
        guard request.operations.count <= Self.maxOperationsPerBatch else {
            throw NimbusError.badRequest("a batch holds at most \(Self.maxOperationsPerBatch) operations; split it")
        }
        let limits = server.configuration.keyValueLimits
        try limits.validate(request.operations)
        // SQLite reads a key only up to a NUL, so two keys differing after one would be one entry.
        for operation in request.operations where operation.key.utf8.contains(0) {
            throw NimbusError.badRequest("key \"\(operation.key.prefix(80))\" holds a NUL character, which keys may not")
        }
        for operation in request.operations where !(operation.value?.isRepresentable ?? true) {
            throw NimbusError.badRequest("the value for key \"\(operation.key)\" is not a finite number")
        }
        var mutations = [EntryMutation]()
        var positions = [String: Int]()
        for operation in request.operations {
            let mutation = EntryMutation(
                key: operation.key, payload: operation.value?.encoded(), size: operation.value?.byteSize ?? 0)
            if let position = positions[operation.key] {
                mutations[position] = mutation  // later operations on a key win within a batch
            } else {
                positions[operation.key] = mutations.count
                mutations.append(mutation)
            }
        }
        let state = try await server.store.commit(zone, mutations: mutations) { state in
            try limits.validateTotals(keys: state.liveEntries, bytes: state.liveBytes)
        }
        server.push.publish(to: zone.accountID, PushMessage(type: .zoneMoved, zone: zone.address, sequence: state.sequence))
        return KeyValueModifyResponse(syncToken: state.token.encoded, sequence: state.sequence)
    }
}
