import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

@Suite(.cleansUp) struct PredicateTests {
    @Test func theIssueExamplesParseToWireFilters() throws {
        #expect(
            try Predicate.filters("list == %@", [.reference(RecordReference(recordName: "groceries"))]) == [
                QueryFilter(
                    fieldName: "list", comparator: .equals, fieldValue: .reference(RecordReference(recordName: "groceries")))
            ])
        #expect(
            try Predicate.filters("name BEGINSWITH 'a' AND number > 3") == [
                QueryFilter(fieldName: "name", comparator: .beginsWith, fieldValue: .string("a")),
                QueryFilter(fieldName: "number", comparator: .greaterThan, fieldValue: .int64(3)),
            ])
        #expect(
            try Predicate.filters("self CONTAINS 'milk'") == [
                QueryFilter(
                    systemFieldName: Predicate.allTokensField, comparator: .containsAllTokens, fieldValue: .string("milk"))
            ])
        let here = Location(latitude: 52.37, longitude: 4.89)
        #expect(
            try Predicate.filters("distanceToLocation:fromLocation:(location, %@) < 5000", [.location(here)]) == [
                QueryFilter(fieldName: "location", comparator: .near, fieldValue: .location(here), distance: 5000)
            ])
    }

    @Test func everyComparisonFormMapsToItsComparator() throws {
        let cases: [(String, QueryFilter.Comparator)] = [
            ("n = 1", .equals), ("n == 1", .equals), ("n != 1", .notEquals), ("n <> 1", .notEquals),
            ("n < 1", .lessThan), ("n <= 1", .lessThanOrEquals), ("n =< 1", .lessThanOrEquals),
            ("n > 1", .greaterThan), ("n >= 1", .greaterThanOrEquals), ("n => 1", .greaterThanOrEquals),
            ("1 < n", .greaterThan), ("1 >= n", .lessThanOrEquals),
            ("n IN {1, 2}", .in), ("NOT n IN {1, 2}", .notIn), ("1 IN n", .listContains), ("n CONTAINS 1", .listContains),
            ("NOT n CONTAINS 1", .notListContains), ("ANY n == 1", .listContains), ("ANY n IN {1}", .listContainsAny),
            ("ANY n BEGINSWITH 'a'", .listMemberBeginsWith), ("NOT n BEGINSWITH 'a'", .notBeginsWith),
        ]
        for (format, comparator) in cases {
            #expect(try Predicate.filters(format).map(\.comparator) == [comparator], "\(format)")
        }
    }

    @Test func betweenBecomesTwoBoundsAndSystemFieldsTheirWebNames() throws {
        let filters = try Predicate.filters(
            "creationDate BETWEEN %@",
            [.list([.timestamp(Date(timeIntervalSince1970: 1)), .timestamp(Date(timeIntervalSince1970: 2))])])
        #expect(filters.map(\.comparator) == [.greaterThanOrEquals, .lessThanOrEquals])
        #expect(filters.allSatisfy { $0.systemFieldName == "createdTimestamp" && $0.fieldName == nil })
        #expect(
            try Predicate.filters("%K == true", [.string("done")]) == [
                QueryFilter(fieldName: "done", comparator: .equals, fieldValue: .int64(1))
            ])
        #expect(try Predicate.filters("TRUEPREDICATE").isEmpty)
        #expect(try Predicate.filters("(a == 'x' AND b == 2.5) && c != \"y\"").count == 3)
    }

    @Test(arguments: [
        ("name == ", 8, "expected a value"),
        ("name == 'open", 8, "unterminated string"),
        ("a == 1 OR b == 2", 7, "OR is not supported"),
        ("NOT (a == 1 AND b == 2)", 4, "NOT applies only"),
        ("name ~ 'x'", 5, "unexpected character"),
        ("name == %@", 8, "more % arguments"),
        ("distanceToLocation:fromLocation:(location, %@) > 5", 47, "inside a radius"),
        ("a == 1 b", 7, "expected AND"),
    ])
    func invalidPredicatesPointAtTheProblem(_ format: String, _ position: Int, _ message: String) {
        let error = #expect(throws: Predicate.ParseError.self) {
            try Predicate.filters(format, format.contains("distance") ? [.location(Location(latitude: 0, longitude: 0))] : [])
        }
        #expect(error?.position == position, "\(error?.description ?? "")")
        #expect(error?.message.contains(message) == true, "\(error?.description ?? "")")
        #expect(error?.wireError.code == .badRequest)
    }
}

@Suite(.cleansUp) struct FieldValueTests {
    @Test func valuesRoundTripWithTheirCloudKitTypes() throws {
        let values: [FieldValue] = [
            .string("x"), .int64(-1), .double(0.5), .timestamp(Date(timeIntervalSince1970: 1_422_312_944.104)),
            .bytes(Data([1, 2])),
            .reference(RecordReference(recordName: "r", zoneID: ZoneID(zoneName: "z"), action: .deleteSelf)),
            .location(Location(latitude: 1, longitude: 2)), .list([.string("a"), .string("b")]), .list([], elementType: "INT64"),
        ]
        for value in values {
            let json = try JSONEncoder().encode(value)
            #expect(try JSONDecoder().decode(FieldValue.self, from: json) == value, "\(String(decoding: json, as: UTF8.self))")
        }
        #expect(FieldValue.list([.int64(1)]).typeName == "INT64_LIST")
    }

    @Test func typesAreInferredWhenOmitted() throws {
        func decode(_ json: String) throws -> FieldValue { try JSONDecoder().decode(FieldValue.self, from: Data(json.utf8)) }
        #expect(try decode(#"{"value":"x"}"#) == .string("x"))
        #expect(try decode(#"{"value":3}"#) == .int64(3))
        #expect(try decode(#"{"value":3.5}"#) == .double(3.5))
        #expect(
            try decode(#"{"value":{"recordName":"r","action":"NONE"}}"#)
                == .reference(RecordReference(recordName: "r", action: RecordReference.Action.none)))
        #expect(try decode(#"{"value":["a"]}"#) == .list([.string("a")]))
        #expect(throws: DecodingError.self) { try decode(#"{"value":"x","type":"WIDGET"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"value":"x","type":"INT64"}"#) }
    }
}

@Suite(.cleansUp) struct RecordWireTests {
    @Test func applesModifyResponseExampleDecodes() throws {
        let json = #"""
            { "records": [ {
                "recordName": "4c016e24-c397-4c9d-81d6-dee3e3a48bb0",
                "recordType": "Artist",
                "recordChangeTag": "1e",
                "fields": { "title": { "value": "MacKerricher State Park", "type": "STRING" } },
                "created":  { "timestamp": 1422312944104, "userRecordName": "_9a06", "deviceID": "iCloud" },
                "modified": { "timestamp": 1422312944104, "userRecordName": "_9a06", "deviceID": "iCloud" }
            }, { "recordName": "gone", "reason": "stale tag", "serverErrorCode": "CONFLICT", "uuid": "u1" } ] }
            """#
        struct Answer: Decodable { var records: [RecordResult] }
        let answer = try JSONDecoder().decode(Answer.self, from: Data(json.utf8))
        guard case .record(let record) = answer.records[0], case .failure(let failure) = answer.records[1] else {
            Issue.record("expected a record then a failure")
            return
        }
        #expect(record.fields?["title"] == .string("MacKerricher State Park"))
        #expect(record.created?.timestamp == 1_422_312_944_104)
        #expect(failure.serverErrorCode == .conflict)
        let reencoded = try JSONEncoder().encode(answer.records[1])
        #expect(try JSONDecoder().decode(RecordResult.self, from: reencoded) == answer.records[1])
    }

    @Test func onlyTheCheckedOperationsNeedAChangeTag() {
        #expect(RecordOperation.OperationType.allCases.filter(\.checksChangeTag) == [.update, .replace, .delete])
    }
}
