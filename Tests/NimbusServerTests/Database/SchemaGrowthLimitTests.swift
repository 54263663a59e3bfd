import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// A development schema grows with saves, but only so far: a request adds at most 200 fields, a record
/// type has at most 1,000, and a refused request adds nothing.
@Suite(.cleansUp) struct SchemaGrowthLimitTests {
    static func record(_ name: String, fields: Range<Int>, prefix: String = "f") -> String {
        let fields = fields.map { #""\#(prefix)\#($0)":{"value":\#($0)}"# }.joined(separator: ",")
        return #"{"operationType":"create","record":{"recordType":"Wide","recordName":"\#(name)","fields":{\#(fields)}}}"#
    }

    @Test func growthIsBoundedPerRequestAndPerType() async throws {
        try await DatabaseFixture.run { fixture in
            let tenThousand = try await fixture.post(
                "records/modify", #"{"operations":[\#(Self.record("huge", fields: 0..<10_000))]}"#)
            #expect(
                tenThousand.errorCode == .badRequest && tenThousand.error?.reason.contains("at most 200") == true,
                "\(tenThousand.error?.reason ?? "")")
            // Two records of a batch together past the limit.
            let together = try await fixture.post(
                "records/modify",
                #"{"operations":[\#(Self.record("a", fields: 0..<150)),\#(Self.record("b", fields: 100..<201))]}"#)
            #expect(together.errorCode == .badRequest)
            #expect(
                try await fixture.server.store.schemaText(container: fixture.app.container, environment: "development") == nil,
                "nothing was added")

            for batch in 0..<5 {
                let record = Self.record("r\(batch)", fields: batch * 200..<(batch + 1) * 200)
                let saved = try await fixture.modify(#"{"operations":[\#(record)]}"#)
                #expect(saved.first?.record != nil)
            }
            let full = try await fixture.post(
                "records/modify", #"{"operations":[\#(Self.record("over", fields: 0..<1, prefix: "extra"))]}"#)
            #expect(
                full.errorCode == .badRequest && full.error?.reason.contains("at most 1000") == true,
                "\(full.error?.reason ?? "")")
            // Fields the type has are still written.
            #expect(
                try await fixture.modify(#"{"operations":[\#(Self.record("again", fields: 990..<1000))]}"#).first?.record != nil)
        }
    }
}
