import Foundation
import NimbusCore

/// Everything a device knows about one key-value store, persisted between launches.
///
/// The visible value of a key is its pending local write if there is one, else the last value the
/// server sent. Pending writes always reach the server after every server value this device has
/// seen, so under last-writer-wins they are what the server will hold: showing them is not optimism.
/// Methods applying server events return the keys whose visible value changed, for the change event.
struct KeyValueStoreState: Codable, Sendable, Equatable {
    /// The account the values belong to; another account's values are never shown.
    var accountID: String?
    var syncToken: String?
    var initialSyncDone = false
    var serverValues: [String: KeyValue] = [:]
    var pending: [String: PendingWrite] = [:]
    var nextGeneration: Int64 = 1
    /// While the store downloads everything again after the server answered that its history no longer
    /// holds this device's position (restored from an older backup).
    var resync: Resync?

    struct Resync: Codable, Sendable, Equatable {
        /// The server values the device had.
        var previous: [String: KeyValue]
        /// The keys the download named so far, deletions included.
        var named: Set<String> = []
    }

    struct PendingWrite: Codable, Sendable, Equatable {
        var value: KeyValue?
        /// Orders writes; an upload acknowledges every write up to its highest generation.
        var generation: Int64
    }

    func value(forKey key: String) -> KeyValue? {
        if let write = pending[key] { return write.value }
        return serverValues[key]
    }

    var visibleValues: [String: KeyValue] {
        var values = serverValues
        for (key, write) in pending { values[key] = write.value }
        return values
    }

    /// The sequence the device has applied, from its token.
    var appliedSequence: Int64 { syncToken.flatMap { try? ChangeToken(encoded: $0).sequence } ?? 0 }

    /// Records a local write, or refuses it when it would break a limit (the reason names the limit).
    mutating func write(_ value: KeyValue?, forKey key: String, limits: KeyValueLimits) throws(NimbusError) {
        let operation = KeyValueOperation(key: key, value: value)
        try limits.validate([operation])
        if let value, !value.isRepresentable {
            throw NimbusError.badRequest("the value for key \"\(key)\" is not a finite number")
        }
        var after = visibleValues
        after[key] = value
        try limits.validateTotals(keys: after.count, bytes: after.values.reduce(0) { $0 + $1.byteSize })
        pending[key] = PendingWrite(value: value, generation: nextGeneration)
        nextGeneration += 1
    }

    /// The next batch to upload, oldest first, and the generation it acknowledges up to.
    func uploadBatch(maxOperations: Int) -> (operations: [KeyValueOperation], upTo: Int64)? {
        let writes = pending.sorted { $0.value.generation < $1.value.generation }.prefix(maxOperations)
        guard let last = writes.last else { return nil }
        return (writes.map { KeyValueOperation(key: $0.key, value: $0.value.value) }, last.value.generation)
    }

    /// The server stored the batch: its writes become server values (later local writes stay pending).
    /// When the answer shows the zone moved by exactly the batch's changes since this device's token, the
    /// device holds everything the server does up to the answer's token and takes it, so the change
    /// coming back over the push socket is not downloaded again.
    mutating func uploaded(_ batch: (operations: [KeyValueOperation], upTo: Int64), answer: KeyValueModifyResponse) {
        // The server holds what the batch carried, even for a key written again locally since.
        for operation in batch.operations { serverValues[operation.key] = operation.value }
        for (key, write) in pending where write.generation <= batch.upTo { pending[key] = nil }
        guard let token = syncToken, let before = try? ChangeToken(encoded: token),
            let after = try? ChangeToken(encoded: answer.syncToken), after.zoneID == before.zoneID,
            after.epoch == before.epoch, after.sequence == before.sequence + Int64(batch.operations.count)
        else { return }
        syncToken = answer.syncToken
    }

    /// The server refused the batch (a limit): its writes are dropped and the server's values show again.
    mutating func rejected(upTo generation: Int64) -> [String] {
        var changed = [String]()
        for (key, write) in pending where write.generation <= generation {
            pending[key] = nil
            if serverValues[key] != write.value { changed.append(key) }
        }
        return changed.sorted()
    }

    /// Applies a page of server changes; keys with pending writes keep showing the pending value.
    mutating func apply(_ changes: [KeyValueChange], syncToken: String) -> [String] {
        var changed = [String]()
        for change in changes {
            // During a resync the device still shows what it had until the download names the key.
            let shown =
                if let resync, !resync.named.contains(change.key) { resync.previous[change.key] } else {
                    serverValues[change.key]
                }
            if shown != change.value, pending[change.key] == nil { changed.append(change.key) }
            serverValues[change.key] = change.value
            resync?.named.insert(change.key)
        }
        self.syncToken = syncToken
        return changed
    }

    /// Starts downloading everything again: the server's history no longer holds this device's token.
    mutating func startResync() {
        if resync == nil { resync = Resync(previous: serverValues) }
        resync?.named = []
        serverValues = [:]
        syncToken = nil
    }

    /// Ends a download from scratch. A value the device had from the server that the server's history
    /// does not name at all was written after the backup the server was restored from: it is written again,
    /// so nothing the device holds is lost (a value the server holds, or a deletion it records, stays the
    /// server's). Returns those keys.
    mutating func finishResync() -> [String] {
        guard let resync else { return [] }
        self.resync = nil
        var rewritten = [String]()
        for (key, value) in resync.previous.sorted(by: { $0.key < $1.key })
        where !resync.named.contains(key) && pending[key] == nil {
            pending[key] = PendingWrite(value: value, generation: nextGeneration)
            nextGeneration += 1
            rewritten.append(key)
        }
        return rewritten
    }
}
