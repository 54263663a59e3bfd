import Foundation
import GRDB
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

@testable import NimbusStore

/// A full disk, as SQLite sees one (`max_page_count` makes it answer SQLITE_FULL as it does on ENOSPC):
/// writes are refused whole with `TRY_AGAIN_LATER`, reads go on, and once there is room again the same
/// writes go through, a device's pending ones included.
@Suite(.cleansUp) struct StorageFullTests {
    /// Caps the database at the pages it has now (or lifts the cap).
    static func fillDisk(_ server: TestServer, full: Bool) async throws {
        let store = try #require(server.store as? SQLiteStore)
        try await store.pool.writeWithoutTransaction { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(full ? pages : 1 << 30)")
        }
    }

    static func bigValue(_ key: String) -> String {
        #"{"operations":[{"operationType":"set","key":"\#(key)","value":{"type":"STRING","value":"\#(String(repeating: "x", count: 200_000))"}}]}"#
    }

    @Test func keyValueWritesWaitForRoomAndLoseNothing() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let ann = try await server.signIn(email: "ann@example.com", device: "phone")
        let path = "/kv/1/\(app.storeIdentifier)"
        #expect(
            try await server.request(.POST, "\(path)/modify", session: ann, apiToken: app.apiToken, json: Self.bigValue("first"))
                .status == 200)

        try await Self.fillDisk(server, full: true)
        let refused = try await server.request(
            .POST, "\(path)/modify", session: ann, apiToken: app.apiToken, json: Self.bigValue("second"))
        #expect(refused.status == 503)
        #expect(
            refused.errorCode == .tryAgainLater && refused.error?.retryAfter != nil,
            "\(String(decoding: refused.body, as: UTF8.self))")
        #expect(refused.headers["Retry-After"].first != nil)
        let values = try await server.request(.GET, "\(path)/values", session: ann, apiToken: app.apiToken)
        #expect(values.status == 200)
        let keys = try values.decode(KeyValueSnapshot.self).values.keys
        #expect(Set(keys) == ["first"], "nothing of the refused batch was written")

        // A device's write made meanwhile stays pending, and goes up once there is room.
        let phone = try server.keyValueStore(ann, app: app)
        defer { phone.close() }
        phone.set(String(repeating: "y", count: 200_000), forKey: "third")
        #expect(await phone.synchronize() == false)
        #expect(phone.lastSyncError?.code == .tryAgainLater)
        try await Self.fillDisk(server, full: false)
        #expect(await phone.synchronize())
        let after = try await server.request(.GET, "\(path)/values", session: ann, apiToken: app.apiToken)
        #expect(Set(try after.decode(KeyValueSnapshot.self).values.keys) == ["first", "third"])
    }

    @Test func recordBatchesAreRefusedWhole() async throws {
        let fixture = try await DatabaseFixture.make()
        _ = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"kept","recordType":"Notes","fields":{"text":{"value":"a"}}}}]}"#
        )
        try await Self.fillDisk(fixture.server, full: true)
        let big = String(repeating: "z", count: 100_000)
        let batch =
            #"{"operations":["#
            + (0..<5).map {
                #"{"operationType":"create","record":{"recordName":"n\#($0)","recordType":"Notes","fields":{"text":{"value":"\#(big)"}}}}"#
            }
            .joined(separator: ",") + "]}"
        let refused = try await fixture.post("records/modify", batch)
        #expect(
            refused.status == 503 && refused.errorCode == .tryAgainLater,
            "\(String(decoding: refused.body.prefix(300), as: UTF8.self))")
        let found = try await fixture.query(#"{"query":{"recordType":"Notes"}}"#)
        #expect(found.records.names == ["kept"])

        try await Self.fillDisk(fixture.server, full: false)
        #expect(try await fixture.post("records/modify", batch).status == 200)
        #expect(try await fixture.query(#"{"query":{"recordType":"Notes"}}"#).records.count == 6)
    }

    @Test func assetFilesTellAFullDiskFromOtherFailures() throws {
        // Every write to /dev/full fails as a write to a full disk does (ENOSPC).
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let noSpace = #expect(throws: (any Error).self) { try full.write(contentsOf: Data(repeating: 0, count: 4096)) }
        #expect(noSpace.map(LocalBlobWriter.storeError) as? StoreError == .storageFull)
        let missing = #expect(throws: (any Error).self) {
            try FileHandle(forWritingTo: URL(fileURLWithPath: "/nonexistent/file"))
        }
        #expect(missing.map(LocalBlobWriter.storeError) as? StoreError == nil)
    }
}
