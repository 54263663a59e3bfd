import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// Hierarchy shares over CloudKit Web Services' wire: `forRecord` on the share, `share` on the root,
/// `ALREADY_SHARED`, and what a participant's requests reveal of records outside the share.
@Suite(.cleansUp) struct HierarchyShareRouteTests {
    static let zone = #""zoneID":{"zoneName":"Trips"}"#

    static func save(_ name: String, type: String = "Items", parent: String? = nil, fields: String = "") -> String {
        let parent = parent.map { #","parent":{"recordName":"\#($0)"}"# } ?? ""
        return
            #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"\#(type)"\#(parent),"fields":{\#(fields)}}}"#
    }

    static func share(_ name: String, root: String, email: String = "bob@example.com") -> String {
        #"{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"cloudkit.share","forRecord":{"recordName":"\#(root)"},"publicPermission":"NONE","participants":[{"userIdentity":{"lookupInfo":{"emailAddress":"\#(email)"}},"permission":"READ_WRITE"}]}}"#
    }

    @Test func theWireCarriesForRecordAndShareAndRefusesASecondShare() async throws {
        let fixture = try await DatabaseFixture.make()
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        _ = try await fixture.post("zones/modify", #"{"operations":[\#(ZoneAndChangeTests.zoneOperation("create", "Trips"))]}"#)
        let saved = try await fixture.modify(
            #"{"operations":[\#(Self.save("japan", type: "Lists")),\#(Self.save("passport", parent: "japan", fields: #""code":{"value":"X1"}"#)),\#(Self.save("gift", fields: #""code":{"value":"Y2"}"#))],\#(Self.zone)}"#
        )
        #expect(saved.codes == [nil, nil, nil])

        let shared = try await fixture.modify(#"{"operations":[\#(Self.share("trip-share", root: "japan"))],\#(Self.zone)}"#)
        let share = try #require(shared.first?.record)
        #expect(share.forRecord?.recordName == "japan" && share.recordType == "cloudkit.share")
        #expect(share.participants?.first?.acceptanceStatus == "INVITED")
        let shortGUID = try #require(share.shortGUID)
        let root = try await fixture.post("records/lookup", #"{"records":[{"recordName":"japan"}],\#(Self.zone)}"#)
        #expect(try root.decode(RecordsResponse.self).records.first?.record?.share?.recordName == "trip-share")
        let plain = try JSONSerialization.jsonObject(with: root.body) as? [String: Any]
        let plainRoot = (plain?["records"] as? [[String: Any]])?.first
        #expect((plainRoot?["share"] as? [String: Any])?["recordName"] as? String == "trip-share")

        // One share per record: not a second share of the root, nor of a record inside the hierarchy.
        let second = try await fixture.modify(#"{"operations":[\#(Self.share("other", root: "japan"))],\#(Self.zone)}"#)
        #expect(second.codes == [.alreadyShared])
        let inner = try await fixture.modify(#"{"operations":[\#(Self.share("inner", root: "passport"))],\#(Self.zone)}"#)
        #expect(inner.codes == [.alreadyShared])
        let missing = try await fixture.modify(#"{"operations":[\#(Self.share("ghost", root: "nothing"))],\#(Self.zone)}"#)
        #expect(missing.codes == [.notFound])

        // The participant accepts by shortGUID; a forged one for another share of the zone is refused.
        let forged = Base64.encode("h1/\(fixture.ann.userRecordName)/Trips/other".utf8, .url)
        let accepted = try await fixture.post(
            "records/accept", #"{"shortGUIDs":[{"value":"\#(shortGUID)"},{"value":"\#(forged)"},{"value":"not-a-guid"}]}"#,
            database: "shared",
            session: bob
        ).decode(ZonesResponse.self)
        #expect(accepted.zones.map { $0.failure?.serverErrorCode } == [nil, .zoneNotFound, .badRequest])
        // The share record says so wherever it is answered: lookups and change feeds.
        let looked = try await fixture.post("records/lookup", #"{"records":[{"recordName":"trip-share"}],\#(Self.zone)}"#)
        #expect(
            try looked.decode(RecordsResponse.self).records.first?.record?.participants?.first?.acceptanceStatus == "ACCEPTED")
        let feed = try await fixture.post("changes/zone", #"{"zones":[{\#(Self.zone)}]}"#).decode(ZoneChangesResponse.self)
        let fed = feed.zones.first?.records?.first { $0.recordName == "trip-share" }
        #expect(fed?.participants?.first?.acceptanceStatus == "ACCEPTED")

        // Outside the hierarchy: not found, no matter how it is asked for, and VALIDATE cannot probe for it.
        let zoneOfAnn = #""zoneID":{"zoneName":"Trips","ownerRecordName":"\#(fixture.ann.userRecordName)"}"#
        let lookup = try await fixture.post(
            "records/lookup", #"{"records":[{"recordName":"gift"},{"recordName":"passport"}],\#(zoneOfAnn)}"#, database: "shared",
            session: bob
        ).decode(RecordsResponse.self)
        #expect(lookup.records.codes == [.notFound, nil])
        let search = try await fixture.post(
            "records/query",
            #"{"query":{"recordType":"Items","filterBy":[{"fieldName":"code","comparator":"EQUALS","fieldValue":{"value":"Y2"}}]},\#(zoneOfAnn)}"#,
            database: "shared", session: bob
        ).decode(RecordsQueryResponse.self)
        #expect(search.records.isEmpty)
        let probe = try await fixture.post(
            "records/modify",
            #"{"operations":[{"operationType":"create","record":{"recordName":"probe","recordType":"Items","parent":{"recordName":"japan"},"fields":{"link":{"value":{"recordName":"gift","action":"VALIDATE"}}}}}],\#(zoneOfAnn)}"#,
            database: "shared", session: bob
        ).decode(RecordsResponse.self)
        #expect(probe.records.codes == [.validatingReferenceError])

        // Records outside the share answer as missing (only a create learns that the name is taken).
        func bobs(_ operations: String) async throws -> [ErrorCode?] {
            try await fixture.post(
                "records/modify", #"{"operations":[\#(operations)],\#(zoneOfAnn)}"#, database: "shared", session: bob
            )
            .decode(RecordsResponse.self).records.codes
        }
        let hidden = ["gift", "nothing-here"].map { name in
            #"{"operationType":"forceDelete","record":{"recordName":"\#(name)"}}"#
        }
        for operation in hidden { #expect(try await bobs(operation) == [.notFound]) }
        #expect(
            try await bobs(#"{"operationType":"update","record":{"recordName":"gift","recordChangeTag":"1","fields":{}}}"#) == [
                .notFound
            ])
        #expect(
            try await bobs(
                #"{"operationType":"forceUpdate","record":{"recordName":"gift","recordType":"Items","parent":{"recordName":"japan"},"fields":{}}}"#
            ) == [.exists])
        #expect(
            try await bobs(#"{"operationType":"forceDelete","record":{"recordName":"other"}}"#) == [.notFound],
            "another share is hidden too")

        // A participant may not move the root, nor delete it (or anything beyond their reach) through a
        // DELETE_SELF cascade; the owner may not make parents go round in a circle.
        #expect(
            try await bobs(#"{"operationType":"forceUpdate","record":{"recordName":"japan","parent":{"recordName":"passport"}}}"#)
                == [.accessDenied])
        #expect(
            try await bobs(
                #"{"operationType":"forceUpdate","record":{"recordName":"japan","fields":{"pin":{"value":{"recordName":"passport","action":"DELETE_SELF"},"type":"REFERENCE"}}}}"#
            ) == [nil])
        #expect(try await bobs(#"{"operationType":"forceDelete","record":{"recordName":"passport"}}"#) == [.accessDenied])
        let owner = try await fixture.post(
            "records/lookup",
            #"{"records":[{"recordName":"japan"},{"recordName":"trip-share"},{"recordName":"passport"}],\#(Self.zone)}"#)
        #expect(try owner.decode(RecordsResponse.self).records.codes == [nil, nil, nil])
        let cycle = try await fixture.modify(
            #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"japan","parent":{"recordName":"passport"}}}],\#(Self.zone)}"#
        )
        #expect(cycle.codes == [.badRequest])
    }

    @Test func aShareAndItsRootSaveInOneBatchInEitherOrder() async throws {
        let fixture = try await DatabaseFixture.make()
        _ = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        _ = try await fixture.post("zones/modify", #"{"operations":[\#(ZoneAndChangeTests.zoneOperation("create", "Trips"))]}"#)
        let saved = try await fixture.modify(
            #"{"operations":[\#(Self.share("peru-share", root: "peru")),\#(Self.save("peru", type: "Lists")),\#(Self.save("boots", parent: "peru"))],\#(Self.zone)}"#
        )
        #expect(saved.codes == [nil, nil, nil])
        #expect(saved.names == ["peru-share", "peru", "boots"], "answers keep the request's order")
        #expect(saved[0].record?.forRecord?.recordName == "peru")
        let root = try await fixture.post("records/lookup", #"{"records":[{"recordName":"peru"}],\#(Self.zone)}"#)
        #expect(try root.decode(RecordsResponse.self).records.first?.record?.share?.recordName == "peru-share")

        // In an atomic batch that fails, every other operation says ATOMIC_ERROR, whatever the order applied.
        let failed = try await fixture.modify(
            #"{"operations":[\#(Self.share("inca-share", root: "inca")),\#(Self.save("inca", type: "Lists")),\#(Self.save("boots"))],\#(Self.zone)}"#
        )
        #expect(failed.codes == [.atomicError, .atomicError, .exists])
        let nothing = try await fixture.post(
            "records/lookup", #"{"records":[{"recordName":"inca"},{"recordName":"inca-share"}],\#(Self.zone)}"#)
        #expect(try nothing.decode(RecordsResponse.self).records.codes == [.notFound, .notFound])
    }
}
