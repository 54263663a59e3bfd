import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// Every record database route answers malformed bodies with a 4xx and a code: never a 500, on either backend.
@Suite(.cleansUp) struct DatabaseBadInputTests {
    static let posts = [
        "records/modify", "records/lookup", "records/query", "records/changes", "records/accept", "zones/lookup", "zones/modify",
        "zones/changes", "changes/database", "changes/zone", "subscriptions/lookup", "subscriptions/modify", "assets/upload",
    ]

    static let bodies = [
        "", "{", "[]", "null", "7", #"{"operations":7}"#, #"{"records":[{"recordName":5}]}"#, #"{"query":{"recordType":[]}}"#,
        #"{"zones":[{"zoneID":{"zoneName":"../../x"}}]}"#,
        #"{"operations":[{"operationType":"create","record":{"recordType":"T","fields":{"f":{"value":{"nested":true}}}}}]}"#,
        #"{"syncToken":"AAAA"}"#, #"{"tokens":[{"recordType":"T"}]}"#, #"{"shortGUIDs":[{"value":"%%%"}]}"#,
        #"{"subscriptions":[{}]}"#, String(repeating: "[", count: 10_000),
    ]

    @Test(arguments: posts, TestServer.Backend.allCases)
    func malformedBodiesGetAClientError(_ operation: String, on backend: TestServer.Backend) async throws {
        let fixture = try await DatabaseFixture.make(on: backend)
        for database in ["private", "public", "shared"] {
            for body in Self.bodies {
                let response = try await fixture.post(operation, body, database: database)
                #expect((200..<500).contains(response.status), "\(database) \(operation) \(body.prefix(60)) → \(response.status)")
                if response.status >= 400 {
                    #expect(
                        response.error != nil, "\(database) \(operation) \(body.prefix(60)): the error has a body with a code")
                }
            }
        }
    }
}
