import Foundation
import NimbusCore
import NimbusStore
import NimbusTestingCore
import Testing

/// Grants in scopes, entry audiences (what sharing part of a zone stands on) and role memberships, run per
/// backend.
@Suite(.cleansUp) struct AccessConformanceTests {
    let zones = IndexConformanceTests()

    func makeAccount(_ store: any Store) async throws -> String {
        let id = Secrets.userRecordName()
        try await store.createAccount(
            AccountRecord(id: id, email: "\(id)@example.com", passwordHash: "x", isAdministrator: false, createdAt: Date()))
        return id
    }

    @Test(arguments: StoreBackend.allCases)
    func anEntryKeepsItsAudienceThroughItsTombstone(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await zones.makeZone(store)
        _ = try await store.transact(zone, creating: true) { transaction in
            try transaction.put("shared", payload: Data("1".utf8), size: 1, audience: "trip")
            try transaction.put("private", payload: Data("2".utf8), size: 1)
            try transaction.index("shared", kind: "Items", rows: [])
        }
        #expect(try await store.entries(zone, keys: ["shared"]).first?.audience == "trip")
        #expect(try await store.query(IndexQuery(zones: [zone], kind: "Items", limit: 10)).map(\.entry.audience) == ["trip"])
        let audience = try await store.transact(zone, creating: false) { transaction in
            let audience = try transaction.entry("shared")?.audience
            try transaction.put("shared", payload: nil, size: 0, audience: "trip")
            return audience
        }.result
        #expect(audience == "trip")
        let page = try await store.changes(zone, after: 0, limit: 10)
        #expect(page.entries.map(\.key) == ["private", "shared"])
        #expect(page.entries.map(\.audience) == [nil, "trip"])
        #expect(page.entries.last?.payload == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func grantsOfOneScopeAreReplacedAndAcceptedApartFromOthers(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let zone = try await zones.makeZone(store)
        let (ann, bob) = (try await makeAccount(store), try await makeAccount(store))
        _ = try await store.transact(zone, creating: true) { transaction in
            try transaction.setGrants([ZoneGrant(scope: "trip", grantee: ann, permission: .read)], scope: "trip")
            try transaction.setGrants(
                [
                    ZoneGrant(scope: "party", grantee: ann, permission: .readWrite),
                    ZoneGrant(scope: "party", grantee: bob, permission: .read),
                ],
                scope: "party")
        }
        try await store.acceptGrant(zone, scope: "party", grantee: ann)
        await #expect(throws: StoreError.self) { try await store.acceptGrant(zone, scope: "trip", grantee: bob) }
        var grants = try await store.grants(zone)
        #expect(
            grants.filter { $0.grantee == ann }.map { "\($0.scope):\($0.permission.rawValue):\($0.accepted)" } == [
                "party:readWrite:true", "trip:read:false",
            ])
        // Replacing one scope keeps the acceptance of grantees it keeps and leaves the other scopes alone.
        _ = try await store.transact(zone, creating: false) { transaction in
            try transaction.setGrants([ZoneGrant(scope: "party", grantee: ann, permission: .read)], scope: "party")
        }
        grants = try await store.grants(zone)
        #expect(
            grants.map { "\($0.scope):\($0.grantee == ann ? "ann" : "bob"):\($0.accepted)" } == [
                "party:ann:true", "trip:ann:false",
            ])
        let granted = try await store.grantedZones(grantee: ann, service: IndexConformanceTests.service)
        #expect(granted.map(\.grant.scope) == ["party", "trip"])
        #expect(try await store.grantedZones(grantee: bob, service: IndexConformanceTests.service).isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func roleMembershipsArePerContainerEnvironmentAndRole(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "T"))
        try await store.createContainer(Container(identifier: "iCloud.com.x.y", teamID: "98Z3R5XU29"))
        let (ann, bob) = (try await makeAccount(store), try await makeAccount(store))
        let container = "iCloud.com.x.y"
        try await store.setRoleMember(
            RoleMember(role: "Editors", accountID: ann), container: container, environment: "production", member: true)
        try await store.setRoleMember(
            RoleMember(role: "Editors", accountID: ann), container: container, environment: "production", member: true)
        try await store.setRoleMember(
            RoleMember(role: "Readers", accountID: bob), container: container, environment: "production", member: true)
        try await store.setRoleMember(
            RoleMember(role: "Editors", accountID: bob), container: container, environment: "development", member: true)
        #expect(
            try await store.roleMembers(container: container, environment: "production") == [
                RoleMember(role: "Editors", accountID: ann), RoleMember(role: "Readers", accountID: bob),
            ])
        try await store.setRoleMember(
            RoleMember(role: "Editors", accountID: ann), container: container, environment: "production", member: false)
        try await store.setRoleMember(
            RoleMember(role: "Editors", accountID: ann), container: container, environment: "production", member: false)
        #expect(
            try await store.roleMembers(container: container, environment: "production") == [
                RoleMember(role: "Readers", accountID: bob)
            ])
        #expect(
            try await store.roleMembers(container: container, environment: "development") == [
                RoleMember(role: "Editors", accountID: bob)
            ])
        await #expect(throws: (any Error).self) {
            try await store.setRoleMember(
                RoleMember(role: "Editors", accountID: "nobody"), container: container, environment: "production", member: true)
        }
    }
}
