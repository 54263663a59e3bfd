import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// The shopping-list app over CloudKit Web Services' wire format: lists, items referencing their list
/// with DELETE_SELF, queries by list sorted by name, a field added later, cascading deletes.
@Suite(.cleansUp) struct ShoppingListTests {
    static func item(_ name: String, _ title: String, list: String, extra: String = "") -> String {
        #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Items","fields":{"name":{"value":"\#(title)"},"#
            + #""list":{"value":{"recordName":"\#(list)","action":"DELETE_SELF"},"type":"REFERENCE"}\#(extra)}}}"#
    }

    @Test func listsItemsQueriesAndCascadingDeletes() async throws {
        let fixture = try await DatabaseFixture.make()
        let saved = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"groceries","recordType":"Lists","fields":{"title":{"value":"Groceries"}}}},"#
                + #"{"operationType":"create","record":{"recordName":"hardware","recordType":"Lists","fields":{"title":{"value":"Hardware"}}}},"#
                + [
                    Self.item("i1", "milk", list: "groceries"), Self.item("i2", "bread", list: "groceries"),
                    Self.item("i3", "nails", list: "hardware"),
                ]
                .joined(separator: ",") + "]}")
        #expect(saved.names == ["groceries", "hardware", "i1", "i2", "i3"])
        let milk = try #require(saved[2].record)
        #expect(milk.recordChangeTag != nil)
        #expect(milk.created?.userRecordName == fixture.ann.userRecordName)
        #expect(milk.zoneID == ZoneID(zoneName: "_defaultZone", ownerRecordName: fixture.ann.userRecordName))
        #expect(milk.fields?["list"] == .reference(RecordReference(recordName: "groceries", action: .deleteSelf)))

        let byList =
            #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"list","comparator":"EQUALS","fieldValue":{"value":{"recordName":"groceries"},"type":"REFERENCE"}}],"sortBy":[{"fieldName":"name"}]}}"#
        #expect(try await fixture.query(byList).records.names == ["i2", "i1"])

        // A field added later needs no migration: old records simply lack it.
        let later = try await fixture.modify(
            #"{"operations":["# + Self.item("i4", "apples", list: "groceries", extra: #","number":{"value":6}"#) + "]}")
        #expect(later[0].record?.fields?["number"] == .int64(6))
        let numbered =
            #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"number","comparator":"GREATER_THAN","fieldValue":{"value":3}}]}}"#
        #expect(try await fixture.query(numbered).records.names == ["i4"])
        #expect(try await fixture.query(byList).records.names == ["i4", "i2", "i1"])

        let deleted = try await fixture.modify(
            #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"groceries"}}]}"#)
        #expect(deleted[0].record?.deleted == true)
        let all = #"{"query":{"recordType":"Items","sortBy":[{"fieldName":"name"}]}}"#
        #expect(try await fixture.query(all).records.names == ["i3"])
        let lookup = try await fixture.post("records/lookup", #"{"records":[{"recordName":"i1"},{"recordName":"i3"}]}"#)
            .decode(RecordsResponse.self).records
        #expect(lookup.codes == [.notFound, nil])

        let feed = try await fixture.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"}}]}"#)
            .decode(ZoneChangesResponse.self)
        let records = try #require(feed.zones.first?.records)
        #expect(Set(records.filter { $0.deleted == true }.compactMap(\.recordName)) == ["groceries", "i1", "i2", "i4"])
        #expect(Set(records.filter { $0.deleted != true }.compactMap(\.recordName)) == ["hardware", "i3"])
    }

    @Test func theDevelopmentSchemaGrowsWithSavesAndProductionRefusesUnknownTypes() async throws {
        let fixture = try await DatabaseFixture.make()
        _ = try await fixture.modify(#"{"operations":["# + Self.item("i1", "milk", list: "l") + "]}")
        let schema = try #require(
            try await fixture.server.store.schemaText(container: fixture.app.container, environment: "development"))
        let parsed = try Schema(parsing: schema)
        let items = try #require(parsed.recordTypes.first { $0.name == "Items" })
        #expect(items.fields.map(\.name) == ["list", "name"])
        #expect(items.fields.allSatisfy { $0.queryable && $0.sortable })

        let production = try await fixture.modify(
            #"{"operations":["# + Self.item("i1", "milk", list: "l") + "]}", environment: "production")
        #expect(production.codes == [.badRequest])
        #expect(production[0].failure?.reason.contains("Items") == true)
        let wrongType = try await fixture.modify(
            #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"i1","fields":{"name":{"value":5}}}}]}"#)
        #expect(wrongType.codes == [.badRequest])
        #expect(wrongType[0].failure?.reason.contains("STRING") == true)
    }
}
