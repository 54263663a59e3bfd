import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// `records/query` over HTTP: every comparator, sorting, system fields, paging and index errors.
@Suite(.cleansUp) struct RecordQueryTests {
    /// Items with a name, a number, tags, a location and a note, saved into the default zone.
    static func seed(_ fixture: DatabaseFixture) async throws {
        let items: [(String, String, Int, [String], Double, Double, String)] = [
            ("i1", "milk", 1, ["dairy", "cold"], 52.52, 13.405, "fresh whole milk"),
            ("i2", "mints", 5, ["sweet"], 48.8566, 2.3522, "peppermint candy"),
            ("i3", "bread", 9, [], 52.50, 13.40, "whole grain bread"),
        ]
        let operations = items.map { name, title, number, tags, latitude, longitude, note in
            #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Items","fields":{"#
                + #""name":{"value":"\#(title)"},"number":{"value":\#(number)},"#
                + #""tags":{"value":[\#(tags.map { "\"\($0)\"" }.joined(separator: ","))],"type":"STRING_LIST"},"#
                + #""location":{"value":{"latitude":\#(latitude),"longitude":\#(longitude)},"type":"LOCATION"},"#
                + #""note":{"value":"\#(note)"}}}}"#
        }
        _ = try await fixture.modify(#"{"operations":[\#(operations.joined(separator: ","))]}"#)
    }

    static func names(_ fixture: DatabaseFixture, _ filter: String, sort: String = #"[{"fieldName":"number"}]"#) async throws
        -> [String?]
    {
        try await fixture.query(#"{"query":{"recordType":"Items","filterBy":[\#(filter)],"sortBy":\#(sort)}}"#).records.names
    }

    static func filter(_ field: String, _ comparator: String, _ value: String, type: String? = nil, system: Bool = false)
        -> String
    {
        let name = system ? #""systemFieldName":"\#(field)""# : #""fieldName":"\#(field)""#
        let typed = type.map { #","type":"\#($0)""# } ?? ""
        return #"{\#(name),"comparator":"\#(comparator)","fieldValue":{"value":\#(value)\#(typed)}}"#
    }

    @Test func everyComparator() async throws {
        let fixture = try await DatabaseFixture.make()
        try await Self.seed(fixture)
        let cases: [(String, [String])] = [
            (Self.filter("name", "EQUALS", #""milk""#), ["i1"]),
            (Self.filter("name", "NOT_EQUALS", #""milk""#), ["i2", "i3"]),
            (Self.filter("number", "LESS_THAN", "5"), ["i1"]),
            (Self.filter("number", "LESS_THAN_OR_EQUALS", "5"), ["i1", "i2"]),
            (Self.filter("number", "GREATER_THAN", "1"), ["i2", "i3"]),
            (Self.filter("number", "GREATER_THAN_OR_EQUALS", "9"), ["i3"]),
            (Self.filter("number", "IN", "[1,9]", type: "INT64_LIST"), ["i1", "i3"]),
            (Self.filter("number", "NOT_IN", "[1,9]", type: "INT64_LIST"), ["i2"]),
            (Self.filter("name", "BEGINS_WITH", #""mi""#), ["i1", "i2"]),
            (Self.filter("name", "NOT_BEGINS_WITH", #""mi""#), ["i3"]),
            (Self.filter("tags", "LIST_CONTAINS", #""cold""#), ["i1"]),
            (Self.filter("tags", "NOT_LIST_CONTAINS", #""cold""#), ["i2", "i3"]),
            (Self.filter("tags", "LIST_CONTAINS_ANY", #"["cold","sweet"]"#, type: "STRING_LIST"), ["i1", "i2"]),
            (Self.filter("tags", "NOT_LIST_CONTAINS_ANY", #"["cold","sweet"]"#, type: "STRING_LIST"), ["i3"]),
            (Self.filter("tags", "LIST_CONTAINS_ALL", #"["cold","dairy"]"#, type: "STRING_LIST"), ["i1"]),
            (Self.filter("tags", "NOT_LIST_CONTAINS_ALL", #"["cold","dairy"]"#, type: "STRING_LIST"), ["i2", "i3"]),
            (Self.filter("tags", "LIST_MEMBER_BEGINS_WITH", #""sw""#), ["i2"]),
            (Self.filter("tags", "NOT_LIST_MEMBER_BEGINS_WITH", #""sw""#), ["i1", "i3"]),
            (Self.filter("note", "CONTAINS_ALL_TOKENS", #""Whole MILK""#), ["i1"]),
            (Self.filter("note", "CONTAINS_ANY_TOKENS", #""candy grain""#), ["i2", "i3"]),
            (Self.filter("allTokens", "CONTAINS_ALL_TOKENS", #""bread""#), ["i3"]),
            // All text: the words of every text field, lists too, one word found in one field and one in another.
            (Self.filter("allTokens", "CONTAINS_ALL_TOKENS", #""mints Peppermint""#), ["i2"]),
            (Self.filter("allTokens", "CONTAINS_ALL_TOKENS", #""whole""#), ["i1", "i3"]),
            (Self.filter("allTokens", "CONTAINS_ANY_TOKENS", #""sweet grain""#, system: true), ["i2", "i3"]),
            (Self.filter("allTokens", "CONTAINS_ALL_TOKENS", #""mints bread""#, system: true), []),
            (Self.filter("recordName", "EQUALS", #"{"recordName":"i2"}"#, type: "REFERENCE", system: true), ["i2"]),
            (
                #"{"fieldName":"location","comparator":"NEAR","fieldValue":{"value":{"latitude":52.52,"longitude":13.405},"type":"LOCATION"},"distance":5000}"#,
                ["i1", "i3"]
            ),
        ]
        for (filter, expected) in cases {
            #expect(try await Self.names(fixture, filter) == expected, "\(filter)")
        }
        let byDistance =
            #"[{"fieldName":"location","relativeLocation":{"value":{"latitude":48.85,"longitude":2.35},"type":"LOCATION"}}]"#
        #expect(try await Self.names(fixture, "", sort: byDistance) == ["i2", "i3", "i1"])
        // System fields besides the record's name are queried once the schema gives them an index, as in
        // CloudKit; declaring one indexes the records already stored.
        let newestFirst = #"[{"systemFieldName":"createdTimestamp","ascending":false},{"fieldName":"name","ascending":false}]"#
        let created = Self.filter("___createTime", "GREATER_THAN", "0", type: "TIMESTAMP")
        let unsorted = try await fixture.post("records/query", #"{"query":{"recordType":"Items","sortBy":\#(newestFirst)}}"#)
        #expect(
            unsorted.errorCode == .badRequest && unsorted.error?.reason.contains(#"`"___createTime" TIMESTAMP SORTABLE`"#) == true
        )
        let unfiltered = try await fixture.post("records/query", #"{"query":{"recordType":"Items","filterBy":[\#(created)]}}"#)
        #expect(unfiltered.errorCode == .badRequest && unfiltered.error?.reason.contains("QUERYABLE") == true)
        try await fixture.server.indexSystemFields(["___createTime"], of: "Items", container: fixture.app.container)
        #expect(try await Self.names(fixture, "", sort: newestFirst) == ["i2", "i1", "i3"])
        #expect(try await Self.names(fixture, created) == ["i1", "i2", "i3"])
    }

    @Test func pagesContinueWhereTheLastEnded() async throws {
        let fixture = try await DatabaseFixture.make()
        let operations = (0..<25).map {
            #"{"operationType":"create","record":{"recordName":"r\#($0)","recordType":"Items","fields":{"number":{"value":\#($0)}}}}"#
        }
        _ = try await fixture.modify(#"{"operations":[\#(operations.joined(separator: ","))]}"#)
        var seen = [String?]()
        var marker: String? = nil
        repeat {
            let markerJSON = marker.map { #","continuationMarker":"\#($0)""# } ?? ""
            let page = try await fixture.query(
                #"{"query":{"recordType":"Items","sortBy":[{"fieldName":"number"}]},"resultsLimit":10,"desiredKeys":[]\#(markerJSON)}"#
            )
            #expect(page.records.allSatisfy { $0.record?.fields?.isEmpty == true })
            seen += page.records.names
            marker = page.continuationMarker
            if seen.count == 10 {
                // Between pages, one record already read and one not yet read go, and one arrives among those
                // still to come (tied with r12, before it by name): the next page starts right after the
                // last one read all the same.
                let results = try await fixture.modify(
                    #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"r3"}},"#
                        + #"{"operationType":"forceDelete","record":{"recordName":"r15"}},"#
                        + #"{"operationType":"create","record":{"recordName":"late","recordType":"Items","fields":{"number":{"value":12}}}}]}"#
                )
                #expect(results.allSatisfy { if case .record = $0 { true } else { false } })
            }
        } while marker != nil
        #expect(seen == (0..<12).map { "r\($0)" } + ["late"] + (12..<25).filter { $0 != 15 }.map { "r\($0)" })
        #expect(
            try await fixture.post("records/query", #"{"query":{"recordType":"Items"},"continuationMarker":"garbage"}"#).errorCode
                == .badRequest)
        // A sorted query's marker sent with an unsorted query is refused in words, not misread.
        let sortedMarker = try #require(
            try await fixture.query(#"{"query":{"recordType":"Items","sortBy":[{"fieldName":"number"}]},"resultsLimit":2}"#)
                .continuationMarker)
        let foreign = try await fixture.post(
            "records/query", #"{"query":{"recordType":"Items"},"continuationMarker":"\#(sortedMarker)"}"#)
        #expect(foreign.errorCode == .badRequest && foreign.error?.reason.contains("continuationMarker") == true)
        #expect(
            try await fixture.post("records/query", #"{"query":{"recordType":"Items"},"resultsLimit":201}"#).errorCode
                == .badRequest)
    }

    @Test func badFiltersAndUnindexedFieldsAreClearErrors() async throws {
        let fixture = try await DatabaseFixture.make()
        try await Self.seed(fixture)
        func error(_ body: String, environment: String = "development") async throws -> NimbusError? {
            try await fixture.post("records/query", body, environment: environment).error
        }
        #expect(try await error(#"{"query":{"recordType":"Nope"}}"#)?.code == .badRequest)
        #expect(
            try await error(#"{"query":{"recordType":"Items","filterBy":[\#(Self.filter("missing", "EQUALS", "1"))]}}"#)?.reason
                .contains("missing") == true)
        #expect(
            try await error(#"{"query":{"recordType":"Items","filterBy":[\#(Self.filter("number", "EQUALS", #""one""#))]}}"#)?
                .reason.contains("INT64") == true)
        #expect(
            try await error(
                #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"name","comparator":"LIKE","fieldValue":{"value":"x"}}]}}"#
            )?.code == .badRequest)
        #expect(
            try await error(
                #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"location","comparator":"NEAR","fieldValue":{"value":{"latitude":1,"longitude":2}}}]}}"#
            )?.reason.contains("distance") == true)

        // A production schema whose field lacks an index: the error names the field and the index.
        _ = try await fixture.server.store.updateSchemaText(container: fixture.app.container, environment: "production") { _ in
            ("DEFINE SCHEMA\nRECORD TYPE Items (name STRING, number INT64 SORTABLE);\n", [])
        }
        let unindexed = try await error(
            #"{"query":{"recordType":"Items","filterBy":[\#(Self.filter("name", "EQUALS", #""milk""#))]}}"#,
            environment: "production")
        #expect(unindexed?.code == .badRequest)
        #expect(unindexed?.reason.contains("name") == true && unindexed?.reason.contains("QUERYABLE") == true)
        let unsorted = try await error(
            #"{"query":{"recordType":"Items","sortBy":[{"fieldName":"name"}]}}"#, environment: "production")
        #expect(unsorted?.reason.contains("SORTABLE") == true)
        // Development and production are separate data: production has no records yet.
        #expect(
            try await fixture.query(
                #"{"query":{"recordType":"Items","sortBy":[{"fieldName":"number"}]}}"#, environment: "production"
            ).records.isEmpty)
    }

    @Test func aSearchOfAllTextLooksThroughTheSearchableFieldsOnly() async throws {
        let fixture = try await DatabaseFixture.make()
        _ = try await fixture.server.store.updateSchemaText(container: fixture.app.container, environment: "production") { _ in
            (
                "DEFINE SCHEMA\nRECORD TYPE Items (___recordID REFERENCE QUERYABLE, name STRING QUERYABLE, note STRING SEARCHABLE);\n",
                []
            )
        }
        let create =
            #"{"operations":[{"operationType":"create","record":{"recordName":"i2","recordType":"Items","fields":{"#
            + #""name":{"value":"mints"},"note":{"value":"peppermint candy"}}}}]}"#
        #expect(try await fixture.modify(create, environment: "production").first?.record != nil)
        func names(_ words: String) async throws -> [String?] {
            let filter = Self.filter("allTokens", "CONTAINS_ANY_TOKENS", words, system: true)
            return try await fixture.query(
                #"{"query":{"recordType":"Items","filterBy":[\#(filter)]}}"#, environment: "production"
            )
            .records.names
        }
        #expect(try await names(#""candy""#) == ["i2"])
        #expect(try await names(#""mints""#) == [], "name is not SEARCHABLE")
        // All text takes only token searches, and the error does not send the developer to the schema.
        for body in [
            #"{"query":{"recordType":"Items","filterBy":[\#(Self.filter("allTokens", "EQUALS", #""candy""#, system: true))]}}"#,
            #"{"query":{"recordType":"Items","sortBy":[{"systemFieldName":"allTokens"}]}}"#,
        ] {
            let refused = try await fixture.post("records/query", body, environment: "production").error
            #expect(refused?.code == .badRequest && refused?.reason.contains("CONTAINS_ALL_TOKENS") == true, "\(body)")
        }
    }

    @Test func queriesTooBigForOneStatementAreRefusedAtTheLimits() async throws {
        let fixture = try await DatabaseFixture.make()
        try await Self.seed(fixture)
        func query(filters: [String] = [], sorts: Int = 1) async throws -> RawResponse {
            let sortBy = Array(repeating: #"{"fieldName":"number"}"#, count: sorts).joined(separator: ",")
            return try await fixture.post(
                "records/query",
                #"{"query":{"recordType":"Items","filterBy":[\#(filters.joined(separator: ","))],"sortBy":[\#(sortBy)]}}"#)
        }
        func numbers(_ count: Int) -> String { "[" + (0..<count).map(String.init).joined(separator: ",") + "]" }
        func words(_ count: Int) -> String { "\"" + (0..<count).map { "w\($0)" }.joined(separator: " ") + "\"" }

        // At each limit the query runs; one past it is a clear error, never a failed statement.
        #expect(try await query(sorts: 16).status == 200)
        #expect(try await query(sorts: 17).error?.reason.contains("16 keys") == true)
        #expect(try await query(sorts: 100).errorCode == .badRequest, "more joins than SQLite takes")
        let conditions = try await query(filters: [Self.filter("note", "CONTAINS_ALL_TOKENS", words(64))])
        #expect(conditions.status == 200)
        #expect(
            try await query(filters: [Self.filter("note", "CONTAINS_ALL_TOKENS", words(65))]).error?.reason.contains(
                "64 conditions") == true)
        let values = try await query(filters: [Self.filter("number", "IN", numbers(10_000), type: "INT64_LIST")])
        #expect(values.status == 200)
        #expect(try values.decode(RecordsQueryResponse.self).records.names == ["i1", "i2", "i3"])
        let tooMany = try await query(filters: [Self.filter("number", "IN", numbers(10_001), type: "INT64_LIST")])
        #expect(tooMany.error?.reason.contains("10000 values") == true)
        let manyFilters = Array(repeating: Self.filter("number", "GREATER_THAN", "0"), count: 65)
        #expect(try await query(filters: manyFilters).errorCode == .badRequest)
        // A query subscription is held to the same limits when it is saved.
        let subscription =
            #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"s","subscriptionType":"query","#
            + #""query":{"recordType":"Items","filterBy":[\#(Self.filter("note", "CONTAINS_ALL_TOKENS", words(65)))]}}}]}"#
        let saved = try await fixture.post("subscriptions/modify", subscription)
        #expect(String(decoding: saved.body, as: UTF8.self).contains("64 conditions"))
    }
}
