import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// Zones, the database and zone change feeds, and who may see what.
@Suite(.cleansUp) struct ZoneAndChangeTests {
    static func zoneOperation(_ type: String, _ name: String) -> String {
        #"{"operationType":"\#(type)","zone":{"zoneID":{"zoneName":"\#(name)"}}}"#
    }

    @Test func zonesAreCreatedListedDeletedAndReportedInTheDatabaseFeed() async throws {
        let fixture = try await DatabaseFixture.make()
        let start = try await fixture.post("changes/database", "{}").decode(DatabaseChangesResponse.self)
        #expect(start.zones.isEmpty)

        let created = try await fixture.post(
            "zones/modify",
            #"{"operations":[\#(Self.zoneOperation("create", "Lists")),\#(Self.zoneOperation("create", "Archive"))]}"#
        ).decode(ZonesResponse.self)
        #expect(created.zones.count == 2)
        let listed = try await fixture.get("zones/list").decode(ZonesResponse.self).zones
        let names = listed.compactMap { if case .zone(let zone) = $0 { zone.zoneID.zoneName } else { nil } }
        #expect(Set(names) == ["_defaultZone", "Lists", "Archive"])

        _ = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"Items"}}],"zoneID":{"zoneName":"Archive"}}"#
        )
        _ = try await fixture.post("zones/modify", #"{"operations":[\#(Self.zoneOperation("delete", "Archive"))]}"#)
        let changed = try await fixture.post("changes/database", #"{"syncToken":"\#(start.syncToken)"}"#).decode(
            DatabaseChangesResponse.self)
        #expect(changed.zones.map(\.zoneID.zoneName) == ["Lists", "Archive"])
        #expect(changed.zones.map(\.deleted) == [nil, true])
        let quiet = try await fixture.post("changes/database", #"{"syncToken":"\#(changed.syncToken)"}"#).decode(
            DatabaseChangesResponse.self)
        #expect(quiet.zones.isEmpty && !quiet.moreComing)

        let lookup = try await fixture.post(
            "zones/lookup", #"{"zones":[{"zoneID":{"zoneName":"Lists"}},{"zoneID":{"zoneName":"Archive"}}]}"#
        )
        .decode(ZonesResponse.self).zones
        guard case .failure(let missing) = lookup[1] else { Issue.record("Archive should be gone"); return }
        #expect(missing.serverErrorCode == .zoneNotFound)
        let deletedZoneWrite = try await fixture.post(
            "records/modify",
            #"{"operations":[{"operationType":"create","record":{"recordType":"Items"}}],"zoneID":{"zoneName":"Archive"}}"#)
        #expect(deletedZoneWrite.errorCode == .zoneNotFound)
        #expect(
            try await fixture.post("zones/modify", #"{"operations":[\#(Self.zoneOperation("delete", "_defaultZone"))]}"#).status
                == 200)
        #expect(
            try await fixture.post("zones/modify", #"{"operations":[\#(Self.zoneOperation("create", "../etc"))]}"#).errorCode
                == .badRequest)
    }

    @Test func zoneChangesPageTombstonesAndRefuseForeignTokens() async throws {
        let fixture = try await DatabaseFixture.make()
        _ = try await fixture.post(
            "zones/modify",
            #"{"operations":[\#(Self.zoneOperation("create", "Lists")),\#(Self.zoneOperation("create", "Other"))]}"#)
        let operations = (0..<5).map { #"{"operationType":"create","record":{"recordName":"r\#($0)","recordType":"Items"}}"# }
        _ = try await fixture.modify(#"{"operations":[\#(operations.joined(separator: ","))],"zoneID":{"zoneName":"Lists"}}"#)
        _ = try await fixture.modify(
            #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"r1"}}],"zoneID":{"zoneName":"Lists"}}"#)

        var token: String? = nil
        var pages = [[String]]()
        var more = true
        while more {
            let tokenJSON = token.map { #","syncToken":"\#($0)""# } ?? ""
            let page = try await fixture.post(
                "changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Lists"},"resultsLimit":2\#(tokenJSON)}]}"#
            )
            .decode(ZoneChangesResponse.self).zones[0]
            pages.append(page.records?.map { ($0.deleted == true ? "-" : "") + ($0.recordName ?? "?") } ?? [])
            token = page.syncToken
            more = page.moreComing ?? false
        }
        #expect(pages == [["r0", "r2"], ["r3", "r4"], ["-r1"]])

        let foreign = try await fixture.post(
            "changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Other"},"syncToken":"\#(token!)"}]}"#
        )
        .decode(ZoneChangesResponse.self).zones[0]
        #expect(foreign.serverErrorCode == .changeTokenExpired)
        let missing = try await fixture.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Nope"}}]}"#).decode(
            ZoneChangesResponse.self)
        #expect(missing.zones[0].serverErrorCode == .zoneNotFound)
        let older = try await fixture.post("records/changes", #"{"zoneID":{"zoneName":"Lists"}}"#).decode(RecordsResponse.self)
        #expect(older.records.count == 5 && older.syncToken != nil)
    }

    @Test func usersSeeOnlyTheirOwnDatabases() async throws {
        let fixture = try await DatabaseFixture.make()
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        _ = try await fixture.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"secret","recordType":"Items"}}]}"#)
        let bobsLookup = try await fixture.post("records/lookup", #"{"records":[{"recordName":"secret"}]}"#, session: bob)
            .decode(RecordsResponse.self).records
        #expect(bobsLookup.codes == [.notFound])
        let annsZone =
            #"{"records":[{"recordName":"secret"}],"zoneID":{"zoneName":"_defaultZone","ownerRecordName":"\#(fixture.ann.userRecordName)"}}"#
        #expect(try await fixture.post("records/lookup", annsZone, session: bob).errorCode == .accessDenied)
        let bobsQuery = try await fixture.post("records/query", #"{"query":{"recordType":"Items"}}"#, session: bob).decode(
            RecordsQueryResponse.self)
        #expect(bobsQuery.records.isEmpty)
        let caller = try await fixture.get("users/caller", session: bob).decode(UsersResponse.self)
        #expect(caller.users.map(\.userRecordName) == [bob.userRecordName])
    }

    @Test func sharesNeedACustomZoneKnownPermissionsAndForHierarchiesARoot() async throws {
        let fixture = try await DatabaseFixture.make()
        _ = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        _ = try await fixture.post("zones/modify", #"{"operations":[\#(Self.zoneOperation("create", "Z"))]}"#)
        func share(_ name: String, zone: String, permission: String = "READ_ONLY", publicPermission: String = "NONE") async throws
            -> RawResponse
        {
            try await fixture.post(
                "records/modify",
                #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"cloudkit.share","publicPermission":"\#(publicPermission)","participants":[{"userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}},"permission":"\#(permission)"}]}}],"zoneID":{"zoneName":"\#(zone)"}}"#
            )
        }
        let rootless = try await share("root-share", zone: "Z").decode(RecordsResponse.self)
        #expect(
            rootless.records.first?.failure?.serverErrorCode == .badRequest, "a hierarchy share names its root with forRecord")
        #expect(try await share("cloudkit.zoneshare", zone: "_defaultZone").errorCode == .badRequest)
        #expect(try await share("cloudkit.zoneshare", zone: "Z", permission: "ADMIN").errorCode == .badRequest)
        #expect(try await share("cloudkit.zoneshare", zone: "Z", publicPermission: "READ_ONLY").errorCode == .badRequest)
        let crowd = (0...100).map {
            #"{"userIdentity":{"lookupInfo":{"emailAddress":"p\#($0)@example.com"}},"permission":"READ_ONLY"}"#
        }
        let tooMany = try await fixture.post(
            "records/modify",
            #"{"operations":[{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","participants":[\#(crowd.joined(separator: ","))]}}],"zoneID":{"zoneName":"Z"}}"#
        )
        #expect(tooMany.errorCode == .badRequest && tooMany.error?.reason.contains("100") == true)
        let created = try await share("cloudkit.zoneshare", zone: "Z")
        let record = try #require(try created.decode(RecordsResponse.self).records.first?.record)
        #expect(record.participants?.first?.acceptanceStatus == "INVITED" && record.shortGUID != nil)
    }

    @Test func credentialsAndPathsAreChecked() async throws {
        let fixture = try await DatabaseFixture.make()
        let base = "/database/1/\(fixture.app.container)/development/private/records/query"
        let body = Data(#"{"query":{"recordType":"Items"}}"#.utf8)
        let noSession = try await fixture.server.request(.POST, base + "?ckAPIToken=\(fixture.app.apiToken)", body: body)
        #expect(noSession.status == 421)
        #expect(noSession.error?.code == .authenticationRequired && noSession.error?.redirectURL != nil)
        let noToken = try await fixture.server.request(.POST, base + "?ckWebAuthToken=\(fixture.ann.sessionToken)", body: body)
        #expect(noToken.errorCode == .authenticationFailed)

        let other = try await fixture.server.seedApp(bundleID: "com.example.Other")
        let wrongContainer = try await fixture.server.request(
            .POST,
            "/database/1/\(other.container)/development/private/records/query?ckAPIToken=\(fixture.app.apiToken)&ckWebAuthToken=\(fixture.ann.sessionToken)",
            body: body)
        #expect(wrongContainer.errorCode == .accessDenied)
        let badEnvironment = try await fixture.server.request(
            .POST,
            "/database/1/\(fixture.app.container)/staging/private/records/query?ckAPIToken=\(fixture.app.apiToken)&ckWebAuthToken=\(fixture.ann.sessionToken)",
            body: body)
        #expect(badEnvironment.errorCode == .badRequest)
    }
}
