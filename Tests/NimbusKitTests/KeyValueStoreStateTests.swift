import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

@testable import NimbusKit

/// The local state machine of the key-value store, without a server.
@Suite(.cleansUp) struct KeyValueStoreStateTests {
    let limits = KeyValueLimits.iCloud

    @Test func pendingWritesShowOverServerValues() throws {
        var state = KeyValueStoreState(accountID: "_a")
        _ = state.apply([KeyValueChange(key: "k", value: .int64(1), sequence: 1)], syncToken: "t1")
        try state.write(.int64(2), forKey: "k", limits: limits)
        #expect(state.value(forKey: "k") == .int64(2))
        let changed = state.apply([KeyValueChange(key: "k", value: .int64(3), sequence: 2)], syncToken: "t2")
        #expect(changed.isEmpty, "a server value under a pending write is not visible")
        #expect(state.value(forKey: "k") == .int64(2))
    }

    @Test func uploadsAcknowledgeOnlyTheWritesTheyCarried() throws {
        var state = KeyValueStoreState(accountID: "_a")
        try state.write(.string("first"), forKey: "k", limits: limits)
        let batch = try #require(state.uploadBatch(maxOperations: 100))
        try state.write(.string("second"), forKey: "k", limits: limits)
        state.uploaded(batch, answer: answer(zone: 1, sequence: 1))
        #expect(state.pending["k"]?.value == .string("second"))
        #expect(state.value(forKey: "k") == .string("second"))
        #expect(state.serverValues["k"] == .string("first"), "the server holds the uploaded value under the pending one")
    }

    func token(zone: Int64, sequence: Int64) -> String { ChangeToken(zoneID: zone, sequence: sequence).encoded }
    func answer(zone: Int64, sequence: Int64) -> KeyValueModifyResponse {
        KeyValueModifyResponse(syncToken: token(zone: zone, sequence: sequence), sequence: sequence)
    }

    @Test func anUploadRightAfterTheDevicesTokenMovesTheToken() throws {
        var state = KeyValueStoreState(accountID: "_a")
        _ = state.apply([KeyValueChange(key: "k", value: .int64(1), sequence: 4)], syncToken: token(zone: 7, sequence: 4))
        try state.write(.int64(2), forKey: "k", limits: limits)
        try state.write(.int64(3), forKey: "j", limits: limits)
        let batch = try #require(state.uploadBatch(maxOperations: 100))
        state.uploaded(batch, answer: answer(zone: 7, sequence: 6))
        #expect(state.appliedSequence == 6)
        #expect(state.syncToken == token(zone: 7, sequence: 6))
    }

    @Test func anUploadAfterOthersChangesLeavesTheTokenToTheDownload() throws {
        var state = KeyValueStoreState(accountID: "_a")
        _ = state.apply([], syncToken: token(zone: 7, sequence: 4))
        try state.write(.int64(2), forKey: "k", limits: limits)
        let batch = try #require(state.uploadBatch(maxOperations: 100))
        // Another device's change landed first (5), then this batch (6): change 5 is still to download.
        state.uploaded(batch, answer: answer(zone: 7, sequence: 6))
        #expect(state.appliedSequence == 4)
        // Nor is a token of another zone taken, nor one before any download.
        state.uploaded(batch, answer: answer(zone: 8, sequence: 5))
        #expect(state.syncToken == token(zone: 7, sequence: 4))
        var fresh = KeyValueStoreState(accountID: "_a")
        try fresh.write(.int64(2), forKey: "k", limits: limits)
        fresh.uploaded(try #require(fresh.uploadBatch(maxOperations: 100)), answer: answer(zone: 7, sequence: 1))
        #expect(fresh.syncToken == nil)
    }

    @Test func anUploadAnsweredFromAnotherEpochLeavesTheTokenToTheDownload() throws {
        var state = KeyValueStoreState(accountID: "_a")
        _ = state.apply([], syncToken: token(zone: 7, sequence: 4))
        try state.write(.int64(2), forKey: "k", limits: limits)
        let batch = try #require(state.uploadBatch(maxOperations: 100))
        // The server was restored and others wrote up to 4 in its new history: 5 follows theirs, not ours.
        state.uploaded(
            batch, answer: KeyValueModifyResponse(syncToken: ChangeToken(zoneID: 7, sequence: 5, epoch: 1).encoded, sequence: 5))
        #expect(state.syncToken == token(zone: 7, sequence: 4))
    }

    @Test func aResyncWritesAgainWhatTheRestoredServerLost() throws {
        var state = KeyValueStoreState(accountID: "_a")
        _ = state.apply(
            [
                KeyValueChange(key: "a", value: .int64(1), sequence: 1), KeyValueChange(key: "b", value: .int64(2), sequence: 2),
                KeyValueChange(key: "c", value: .int64(3), sequence: 3), KeyValueChange(key: "d", value: .int64(4), sequence: 4),
            ], syncToken: token(zone: 7, sequence: 4))
        state.startResync()
        #expect(state.syncToken == nil)
        // The restored server holds a and an older c; b was written after its backup; another device deleted
        // d since the restore.
        let changed = state.apply(
            [
                KeyValueChange(key: "a", value: .int64(1), sequence: 1), KeyValueChange(key: "c", value: .int64(30), sequence: 2),
                KeyValueChange(key: "d", value: nil, sequence: 5),
            ],
            syncToken: ChangeToken(zoneID: 7, sequence: 5, epoch: 9).encoded)
        #expect(changed == ["c", "d"], "only what the device shows differently is announced")
        #expect(state.finishResync() == ["b"])
        #expect(state.uploadBatch(maxOperations: 100)?.operations == [KeyValueOperation(key: "b", value: .int64(2))])
        #expect(state.visibleValues == ["a": .int64(1), "b": .int64(2), "c": .int64(30)], "a deletion the server records stays")
        #expect(state.finishResync().isEmpty)
    }

    @Test func rejectedBatchesRevertToServerValues() throws {
        var state = KeyValueStoreState(accountID: "_a")
        _ = state.apply([KeyValueChange(key: "k", value: .int64(1), sequence: 1)], syncToken: "t1")
        try state.write(.int64(2), forKey: "k", limits: limits)
        try state.write(.int64(5), forKey: "new", limits: limits)
        let batch = try #require(state.uploadBatch(maxOperations: 100))
        #expect(batch.operations.map(\.key) == ["k", "new"])
        #expect(state.rejected(upTo: batch.upTo) == ["k", "new"])
        #expect(state.value(forKey: "k") == .int64(1))
        #expect(state.value(forKey: "new") == nil)
    }

    @Test func localWritesBreakingALimitAreRefused() throws {
        var state = KeyValueStoreState(accountID: "_a")
        let tiny = KeyValueLimits(maxKeys: 2)
        try state.write(.bool(true), forKey: "a", limits: tiny)
        try state.write(.bool(true), forKey: "b", limits: tiny)
        #expect(throws: NimbusError.self) { try state.write(.bool(true), forKey: "c", limits: tiny) }
        try state.write(nil, forKey: "a", limits: tiny)
        try state.write(.bool(true), forKey: "c", limits: tiny)
        #expect(Set(state.visibleValues.keys) == ["b", "c"])
    }

    @Test func theStateSurvivesEncoding() throws {
        var state = KeyValueStoreState(accountID: "_a")
        try state.write(.dictionary(["x": .date(Date(timeIntervalSince1970: 3))]), forKey: "a", limits: limits)
        _ = state.apply(
            [KeyValueChange(key: "s", value: .data(Data([1])), sequence: 4)],
            syncToken: ChangeToken(zoneID: 1, sequence: 4).encoded)
        let decoded = try JSONDecoder().decode(KeyValueStoreState.self, from: JSONEncoder().encode(state))
        #expect(decoded == state)
        #expect(decoded.appliedSequence == 4)
    }
}
