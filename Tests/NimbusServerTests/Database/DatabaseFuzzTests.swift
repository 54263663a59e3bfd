import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// Valid CloudKit request bodies with one or two parts replaced (`JSONMutator`): every answer is a 2xx, or
/// a 4xx with a code, never a 500, on either backend.
@Suite(.cleansUp) struct DatabaseFuzzTests {
    /// A well-formed body for each route, touching most of what the route reads.
    static let seeds: [(operation: String, body: String)] = [
        (
            "records/modify",
            #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"a","recordType":"Items","fields":{"#
                + #""name":{"value":"milk"},"n":{"value":3},"loc":{"value":{"latitude":1.0,"longitude":2.0},"type":"LOCATION"},"#
                + #""ref":{"value":{"recordName":"b","action":"DELETE_SELF"},"type":"REFERENCE"},"#
                + #""tags":{"value":["x","y"],"type":"STRING_LIST"},"when":{"value":1700000000000,"type":"TIMESTAMP"},"#
                + #""blob":{"value":"aGVsbG8=","type":"BYTES"}}}}],"zoneID":{"zoneName":"_defaultZone"},"atomic":true,"desiredKeys":["name"]}"#
        ),
        ("records/lookup", #"{"records":[{"recordName":"a"}],"zoneID":{"zoneName":"_defaultZone"},"desiredKeys":["name"]}"#),
        (
            "records/query",
            #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"name","comparator":"BEGINS_WITH","fieldValue":{"value":"m"}},"#
                + #"{"fieldName":"loc","comparator":"NEAR","fieldValue":{"value":{"latitude":1,"longitude":2}},"distance":1000}],"#
                + #""sortBy":[{"fieldName":"name","ascending":true},"#
                + #"{"fieldName":"loc","relativeLocation":{"value":{"latitude":0,"longitude":0},"type":"LOCATION"}}]},"resultsLimit":10}"#
        ),
        ("records/changes", #"{"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":5}"#),
        ("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"},"resultsLimit":5}]}"#),
        ("changes/database", #"{"resultsLimit":5}"#),
        ("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z1"}}}]}"#),
        ("zones/lookup", #"{"zones":[{"zoneID":{"zoneName":"Z1"}}]}"#),
        (
            "subscriptions/modify",
            #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"s1","subscriptionType":"query","#
                + #""query":{"recordType":"Items","filterBy":[]},"firesOn":["create","update"],"zoneID":{"zoneName":"_defaultZone"}}}]}"#
        ),
        (
            "assets/upload",
            #"{"tokens":[{"recordName":"a","recordType":"Items","fieldName":"pic"}],"zoneID":{"zoneName":"_defaultZone"}}"#
        ),
    ]

    @Test(arguments: TestServer.Backend.allCases)
    func mutatedBodiesNeverFailTheServer(on backend: TestServer.Backend) async throws {
        let fixture = try await DatabaseFixture.make(on: backend)
        // The unmutated bodies first, so the record type, zone and subscription they name exist.
        for seed in Self.seeds { _ = try await fixture.post(seed.operation, seed.body) }
        var mutator = JSONMutator(seed: 2026_11_22)
        for round in 0..<600 {
            let seed = Self.seeds[round % Self.seeds.count]
            let json = try mutator.mutate(seed.body)
            // Mostly where the seeds' data is, so that requests get past the first checks.
            let database = mutator.pick(["private", "private", "private", "public", "shared"])
            let environment = mutator.pick(["development", "development", "production"])
            let response = try await fixture.post(seed.operation, json, environment: environment, database: database)
            #expect(response.status < 500, "round \(round): \(database) \(environment) \(seed.operation) \(json.prefix(300))")
            if response.status >= 400 {
                #expect(
                    response.error != nil, "round \(round): \(seed.operation) answered \(response.status) without an error code")
            }
        }
        #expect(try await fixture.server.request(.GET, "/health").status == 200)
    }
}
