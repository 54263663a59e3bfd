import Foundation
import GRDB
import NimbusCore
import NimbusKit
@testable import NimbusStore
import NimbusTesting
import Testing

/// The jobs too long for one request's transaction run beside the server: a deleted zone's records are
/// purged after the deletion answers, and an index backfill a stop cut off resumes when the server starts.
@Suite(.cleansUp) struct LongJobTests {
    static let createdFilter =
        #"{"query":{"recordType":"Items","filterBy":[{"systemFieldName":"createdTimestamp","comparator":"GREATER_THAN","fieldValue":{"value":0,"type":"TIMESTAMP"}}]},"resultsLimit":200}"#

    @Test func aBackfillCutOffByAStopResumesWhenTheServerStarts() async throws {
        let dataDirectory = TestServer.temporaryDirectory()
        let first = try await DatabaseFixture.make(dataDirectory: dataDirectory)
        let operations = (0..<200).map {
            #"{"operationType":"create","record":{"recordName":"r\#($0)","recordType":"Items","fields":{"number":{"value":\#($0)}}}}"#
        }
        _ = try await first.modify(#"{"operations":[\#(operations.joined(separator: ","))]}"#)
        try await first.server.indexSystemFields(["___createTime"], of: "Items", container: first.app.container)
        #expect(try await first.query(Self.createdFilter).records.count == 200)

        // As a stop in the middle of the backfill leaves it: recorded, the records past its cursor not indexed.
        let store = try #require(first.server.store as? SQLiteStore)
        try await store.pool.write { db in
            let field = IndexFieldID.of(kind: "Items", field: "___createTime")
            let halfway = try #require(try Int64.fetchOne(db, sql: "SELECT sequence FROM entries WHERE key = 'r99'"))
            try db.execute(sql: "DELETE FROM entry_index WHERE field = ? AND sequence > ?", arguments: [field, halfway])
            let zone = try #require(try Int64.fetchOne(db, sql: "SELECT zone_id FROM entries WHERE key = 'r99'"))
            try db.execute(
                sql:
                    "INSERT INTO index_backfills (container, environment, kind, zone_id, sequence) VALUES (?, 'development', 'Items', ?, ?)",
                arguments: [first.app.container, zone, halfway])
        }
        #expect(try await first.query(Self.createdFilter).records.count == 100)
        await first.stop()

        let server = try await TestServer.start(dataDirectory: dataDirectory)
        let restarted = DatabaseFixture(server: server, app: first.app, ann: first.ann)
        #expect(try await eventually { try await restarted.query(Self.createdFilter).records.count == 200 })
        #expect(try await eventually { try await server.store.pendingBackfills().isEmpty })
    }

    @Test func aDeletedZonesRecordsArePurgedAfterTheDeletionAnswers() async throws {
        let fixture = try await DatabaseFixture.make()
        _ = try await fixture.post(
            "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Archive"}}}]}"#)
        let operations = (0..<200).map {
            #"{"operationType":"create","record":{"recordName":"r\#($0)","recordType":"Items","fields":{"number":{"value":\#($0)}}}}"#
        }
        _ = try await fixture.modify(#"{"operations":[\#(operations.joined(separator: ","))],"zoneID":{"zoneName":"Archive"}}"#)
        let store = try #require(fixture.server.store as? SQLiteStore)
        let zone = try #require(
            try await store.pool.read { db in try Int64.fetchOne(db, sql: "SELECT zone_id FROM entries WHERE key = 'r0'") })
        @Sendable func rowsLeft() async throws -> Int {
            try await store.pool.read { db in
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT (SELECT count(*) FROM entries WHERE zone_id = ?1) + (SELECT count(*) FROM entry_index WHERE zone_id = ?1)
                            + (SELECT count(*) FROM zones WHERE id = ?1)
                        """, arguments: [zone]) ?? 0
            }
        }
        #expect(try await rowsLeft() > 400)

        let deleted = try await fixture.post(
            "zones/modify", #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Archive"}}}]}"#)
        #expect(deleted.status == 200)
        let lookup = try await fixture.post(
            "records/lookup", #"{"records":[{"recordName":"r0"}],"zoneID":{"zoneName":"Archive"}}"#)
        #expect(lookup.errorCode == .zoneNotFound)
        #expect(try await eventually { try await rowsLeft() == 0 })
    }
}
