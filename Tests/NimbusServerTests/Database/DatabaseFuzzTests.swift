import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// Valid CloudKit request bodies with one or two parts replaced by something a client should not send:
/// every answer is a 2xx, or a 4xx with a code, never a 500. Seeded, so a failure repeats.
@Suite struct DatabaseFuzzTests {
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

    /// What replaces a part, as JSON: wrong types, edge numbers, odd strings, empty and nested containers.
    static let oddities: [String] = [
        "null", "true", "0", "-1", "9223372036854775807", "-9223372036854775808", "1e308", "-0.0", "1.5", #""""#,
        "\"" + String(repeating: "x", count: 70_000) + "\"", #""../../etc""#, #""\u0000""#, #""😀""#, "[]", "{}", "[null]",
        #"{"value":null}"#, #""NaN""#, #""1e999""#, #""INT64_LIST""#, #""REFERENCE""#, #"{"latitude":"x"}"#,
        #"{"value":{"recordName":5}}"#,
    ]

    /// A small deterministic generator (SplitMix64).
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// The paths to every part of a JSON value (keys and indexes).
    static func paths(_ value: Any, _ prefix: [AnyHashable] = []) -> [[AnyHashable]] {
        var found = prefix.isEmpty ? [] : [prefix]
        if let object = value as? [String: Any] {
            // In key order: dictionaries' own order changes from run to run, and the rounds must repeat.
            for (key, member) in object.sorted(by: { $0.key < $1.key }) { found += paths(member, prefix + [key]) }
        } else if let array = value as? [Any] {
            for (index, element) in array.enumerated() { found += paths(element, prefix + [index]) }
        }
        return found
    }

    /// `value` with the part at `path` replaced (or, for an array element, repeated `copies` times).
    static func replacing(_ value: Any, at path: ArraySlice<AnyHashable>, with replacement: Any, copies: Int) -> Any {
        guard let step = path.first else { return replacement }
        if var object = value as? [String: Any], let key = step as? String, let member = object[key] {
            object[key] = replacing(member, at: path.dropFirst(), with: replacement, copies: copies)
            return object
        }
        if var array = value as? [Any], let index = step as? Int {
            if path.count == 1, copies > 1 {
                array.insert(contentsOf: Array(repeating: array[index], count: copies - 1), at: index)
            } else {
                array[index] = replacing(array[index], at: path.dropFirst(), with: replacement, copies: copies)
            }
            return array
        }
        return value
    }

    @Test func mutatedBodiesNeverFailTheServer() async throws {
        let fixture = try await DatabaseFixture.make()
        defer { Task { await fixture.stop() } }
        // The unmutated bodies first, so the record type, zone and subscription they name exist.
        for seed in Self.seeds { _ = try await fixture.post(seed.operation, seed.body) }
        var random = Generator(state: 2026_11_22)
        for round in 0..<600 {
            let seed = Self.seeds[round % Self.seeds.count]
            var body = try JSONSerialization.jsonObject(with: Data(seed.body.utf8))
            for _ in 0...Int.random(in: 0...1, using: &random) {
                let paths = Self.paths(body)
                guard let path = paths.randomElement(using: &random) else { break }
                let repeatElement = path.last is Int && Bool.random(using: &random)
                let oddity = try JSONSerialization.jsonObject(
                    with: Data(Self.oddities.randomElement(using: &random)!.utf8), options: .fragmentsAllowed)
                body = Self.replacing(
                    body, at: path[...], with: oddity, copies: repeatElement ? Int.random(in: 2...300, using: &random) : 1)
            }
            let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            // Mostly where the seeds' data is, so that requests get past the first checks.
            let database = ["private", "private", "private", "public", "shared"].randomElement(using: &random)!
            let environment = ["development", "development", "production"].randomElement(using: &random)!
            let response = try await fixture.post(seed.operation, json, environment: environment, database: database)
            #expect(response.status < 500, "round \(round): \(database) \(environment) \(seed.operation) \(json.prefix(300))")
            if response.status >= 400 {
                #expect(response.error != nil, "round \(round): \(seed.operation) answered \(response.status) without an error code")
            }
        }
        #expect(try await fixture.server.request(.GET, "/health").status == 200)
    }
}
