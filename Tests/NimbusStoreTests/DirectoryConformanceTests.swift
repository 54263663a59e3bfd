import Foundation
import NimbusCore
import NimbusStore
import NimbusTestingCore
import Testing

/// The contract of what the store keeps besides zones — accounts and their profiles, apps, containers,
/// tokens, server keys, asset uploads — written once and run per backend, so that no backend passes
/// while missing one of them.
@Suite(.cleansUp) struct DirectoryConformanceTests {
    func account(_ store: any Store, _ email: String, administrator: Bool = false) async throws -> AccountRecord {
        let account = AccountRecord(
            id: Secrets.userRecordName(), email: email, passwordHash: "x", isAdministrator: administrator,
            createdAt: Date(milliseconds: 1_700_000_000_000))
        try await store.createAccount(account)
        return account
    }

    @Test(arguments: StoreBackend.allCases)
    func accountsAreFoundByIdListedAndCountedAsAdministrators(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let bob = try await account(store, "bob@example.com", administrator: true)
        let ann = try await account(store, "Ann@example.com")
        #expect(try await store.account(id: ann.id) == ann)
        #expect(try await store.account(id: "_missing") == nil)
        #expect(try await store.accounts().map(\.email) == ["Ann@example.com", "bob@example.com"], "by email, any case")
        #expect(try await store.administratorCount() == 1)
        #expect(try await store.account(email: "ANN@EXAMPLE.COM")?.id == ann.id)
        #expect(bob.isAdministrator)
    }

    @Test(arguments: StoreBackend.allCases)
    func onlyDiscoverableAccountsAreFoundByEmailPhoneOrId(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let ann = try await account(store, "ann@example.com")
        let bob = try await account(store, "bob@example.com")
        let cat = try await account(store, "cat@example.com")
        try await store.updateProfile(
            accountID: ann.id, AccountProfile(firstName: "Ann", lastName: "Lee", phoneNumber: "+15551234", discoverable: true))
        try await store.updateProfile(accountID: bob.id, AccountProfile(firstName: "Bob", discoverable: true))
        try await store.updateProfile(accountID: cat.id, AccountProfile(phoneNumber: "+15550000", discoverable: false))
        await #expect(throws: StoreError.self) { try await store.updateProfile(accountID: "_missing", AccountProfile()) }
        #expect(try await store.account(id: ann.id)?.profile.lastName == "Lee")

        let everyone = try await store.discoverableAccounts(emails: nil, phoneNumbers: nil, ids: nil, limit: 10)
        #expect(Set(everyone.map(\.id)) == [ann.id, bob.id])
        #expect(try await store.discoverableAccounts(emails: nil, phoneNumbers: nil, ids: nil, limit: 1).count == 1)
        let byEmail = try await store.discoverableAccounts(
            emails: ["ANN@example.com", "cat@example.com"], phoneNumbers: nil, ids: nil, limit: 10)
        #expect(byEmail.map(\.id) == [ann.id], "any case; not the account that is not discoverable")
        let byPhone = try await store.discoverableAccounts(
            emails: nil, phoneNumbers: ["+15551234", "+15550000"], ids: nil, limit: 10)
        #expect(byPhone.map(\.id) == [ann.id])
        let byID = try await store.discoverableAccounts(emails: [], phoneNumbers: [], ids: [bob.id, cat.id], limit: 10)
        #expect(byID.map(\.id) == [bob.id])
    }

    @Test(arguments: StoreBackend.allCases)
    func devicesAreListedPerAccountAndMarkedSeen(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let ann = try await account(store, "ann@example.com")
        let bob = try await account(store, "bob@example.com")
        let seen = Date(milliseconds: 1_700_000_000_000)
        try await store.saveDevice(DeviceRecord(id: "d-phone", accountID: ann.id, name: "phone", lastSeenAt: seen))
        try await store.saveDevice(DeviceRecord(id: "d-laptop", accountID: ann.id, name: "laptop", lastSeenAt: seen))
        try await store.saveDevice(DeviceRecord(id: "d-bob", accountID: bob.id, name: "phone", lastSeenAt: seen))
        #expect(try await store.devices(accountID: ann.id).map(\.name) == ["laptop", "phone"])
        let later = Date(milliseconds: 1_700_000_360_000)
        try await store.markDeviceSeen(id: "d-phone", at: later)
        #expect(try await store.device(id: "d-phone")?.lastSeenAt == later)
        #expect(try await store.device(id: "d-bob")?.lastSeenAt == seen)
    }

    @Test(arguments: StoreBackend.allCases)
    func revokingADevicesSessionsLeavesOtherDevicesSignedIn(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let ann = try await account(store, "ann@example.com")
        let seen = Date(milliseconds: 1_700_000_000_000)
        try await store.saveDevice(DeviceRecord(id: "d-phone", accountID: ann.id, name: "phone", lastSeenAt: seen))
        try await store.saveDevice(DeviceRecord(id: "d-laptop", accountID: ann.id, name: "laptop", lastSeenAt: seen))
        let expiry = Date(milliseconds: 1_900_000_000_000)
        for (digest, device) in [("s1", "d-phone"), ("s2", "d-phone"), ("s3", "d-laptop")] {
            try await store.createSession(
                SessionRecord(tokenDigest: digest, accountID: ann.id, deviceID: device, expiresAt: expiry))
        }
        try await store.revokeSession(tokenDigest: "s2")
        #expect(try await store.revokeSessions(deviceID: "d-phone") == 1, "one of the phone's sessions was still valid")
        for digest in ["s1", "s2"] {
            #expect(try await store.credentials(sessionDigest: digest, apiTokenDigest: nil).session?.revoked == true)
        }
        #expect(try await store.credentials(sessionDigest: "s3", apiTokenDigest: nil).session?.revoked == false)
        #expect(try await store.revokeSessions(deviceID: "d-missing") == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func teamsHaveDevelopers(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let ann = try await account(store, "ann@example.com")
        let bob = try await account(store, "bob@example.com")
        try await store.createTeam(Team(teamID: "AAAAAAAAAA", name: "A"))
        try await store.createTeam(Team(teamID: "BBBBBBBBBB", name: "B"))
        try await store.addTeamMember(teamID: "AAAAAAAAAA", accountID: ann.id)
        try await store.addTeamMember(teamID: "AAAAAAAAAA", accountID: ann.id)
        try await store.addTeamMember(teamID: "BBBBBBBBBB", accountID: ann.id)
        try await store.addTeamMember(teamID: "BBBBBBBBBB", accountID: bob.id)
        #expect(try await store.teamIDs(memberAccountID: ann.id) == ["AAAAAAAAAA", "BBBBBBBBBB"], "adding twice is harmless")
        #expect(try await store.teamMembers(teamID: "BBBBBBBBBB") == [ann.id, bob.id].sorted())
        await #expect(throws: StoreError.missing("team CCCCCCCCCC")) {
            try await store.addTeamMember(teamID: "CCCCCCCCCC", accountID: ann.id)
        }
        await #expect(throws: StoreError.missing("account _nobody")) {
            try await store.addTeamMember(teamID: "AAAAAAAAAA", accountID: "_nobody")
        }
        try await store.removeTeamMember(teamID: "BBBBBBBBBB", accountID: ann.id)
        #expect(try await store.teamIDs(memberAccountID: ann.id) == ["AAAAAAAAAA"])
        #expect(try await store.teamMembers(teamID: "BBBBBBBBBB") == [bob.id])
    }

    @Test(arguments: StoreBackend.allCases)
    func appsContainersAndTheirExtensionsAreListed(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "Example"))
        try await store.createContainer(Container(identifier: "iCloud.com.example.B", teamID: "98Z3R5XU29"))
        try await store.createContainer(
            Container(identifier: "iCloud.com.example.A", teamID: "98Z3R5XU29", packageExtensions: ["pages"]))
        await #expect(throws: StoreError.self) {
            try await store.createContainer(Container(identifier: "iCloud.com.example.C", teamID: "NOSUCHTEAM"))
        }
        #expect(try await store.containers().map(\.identifier) == ["iCloud.com.example.A", "iCloud.com.example.B"])
        #expect(try await store.container(identifier: "iCloud.com.example.A")?.packageExtensions == ["pages"])
        #expect(try await store.container(identifier: "iCloud.com.example.B")?.packageExtensions == nil)
        #expect(try await store.setPackageExtensions(["key", "numbers"], of: "iCloud.com.example.B"))
        #expect(try await !store.setPackageExtensions(["key"], of: "iCloud.com.example.Missing"))
        #expect(try await store.container(identifier: "iCloud.com.example.B")?.packageExtensions == ["key", "numbers"])
        #expect(try await store.container(identifier: "iCloud.com.example.Missing") == nil)

        for bundleID in ["com.example.b", "com.example.a"] {
            try await store.createApp(
                App(bundleID: bundleID, teamID: "98Z3R5XU29", keyValueStoreIdentifier: "98Z3R5XU29.\(bundleID)", containers: []))
        }
        try await store.entitle(bundleID: "com.example.a", container: "iCloud.com.example.B")
        try await store.entitle(bundleID: "com.example.a", container: "iCloud.com.example.A")
        let apps = try await store.apps()
        #expect(apps.map(\.bundleID) == ["com.example.a", "com.example.b"])
        #expect(apps.first?.containers == ["iCloud.com.example.A", "iCloud.com.example.B"])
        try await store.revokeEntitlement(bundleID: "com.example.a", container: "iCloud.com.example.A")
        #expect(try await store.app(bundleID: "com.example.a")?.containers == ["iCloud.com.example.B"])
        await #expect(throws: StoreError.self) {
            try await store.revokeEntitlement(bundleID: "com.example.a", container: "iCloud.com.example.A")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func apiTokensAndServerKeysAreListedAndRevoked(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let ann = try await account(store, "ann@example.com")
        try await store.createTeam(Team(teamID: "98Z3R5XU29", name: "Example"))
        try await store.createContainer(Container(identifier: "iCloud.com.example.A", teamID: "98Z3R5XU29"))
        try await store.createApp(
            App(bundleID: "com.example.a", teamID: "98Z3R5XU29", keyValueStoreIdentifier: "k", containers: []))
        for name in ["web", "cli"] {
            try await store.createAPIToken(
                APITokenRecord(
                    id: "t-\(name)", tokenDigest: "digest-\(name)", containerID: "iCloud.com.example.A",
                    bundleID: "com.example.a", name: name))
        }
        #expect(try await store.apiTokens().map(\.name) == ["cli", "web"])
        try await store.revokeAPIToken(id: "t-web")
        await #expect(throws: StoreError.self) { try await store.revokeAPIToken(id: "t-missing") }
        #expect(try await store.apiTokens().map(\.revoked) == [false, true])
        let credentials = try await store.credentials(sessionDigest: nil, apiTokenDigest: "digest-web")
        #expect(credentials.apiToken?.revoked == true && credentials.app?.bundleID == "com.example.a")

        let key = ServerKeyRecord(
            id: "k1", container: "iCloud.com.example.A", publicKeyPEM: "-----BEGIN PUBLIC KEY-----", creatorAccountID: ann.id,
            name: "backend")
        try await store.createServerKey(key)
        await #expect(throws: StoreError.self) { try await store.createServerKey(key) }
        var elsewhere = key
        elsewhere.id = "k2"
        elsewhere.container = "iCloud.com.example.Missing"
        await #expect(throws: StoreError.self) { try await store.createServerKey(elsewhere) }
        #expect(try await store.serverKey(id: "k1") == key)
        #expect(try await store.serverKey(id: "k2") == nil)
        try await store.revokeServerKey(id: "k1")
        await #expect(throws: StoreError.self) { try await store.revokeServerKey(id: "k2") }
        #expect(try await store.serverKeys().map(\.revoked) == [true])
    }

    @Test(arguments: StoreBackend.allCases)
    func assetUploadsCompleteOnceAndExpire(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let soon = Date(milliseconds: 1_700_000_000_000)
        let later = Date(milliseconds: 1_700_000_900_000)
        try await store.createAssetUpload(
            AssetUploadRecord(id: "u1", owner: "_owner", container: "iCloud.com.example.A", expiresAt: soon))
        try await store.createAssetUpload(
            AssetUploadRecord(id: "u2", owner: "_owner", container: "iCloud.com.example.A", expiresAt: later))
        #expect(try await store.assetUpload(id: "u1")?.blob == nil)
        let blob = StoredBlob(id: "blob-1", size: 42, checksum: "c1")
        try await store.completeAssetUpload(id: "u1", blob: blob, receiptDigest: "receipt-1")
        await #expect(throws: StoreError.self) {
            try await store.completeAssetUpload(id: "u1", blob: blob, receiptDigest: "receipt-again")
        }
        try await store.completeAssetUpload(
            id: "u2", blob: StoredBlob(id: "blob-2", size: 7, checksum: "c2"), receiptDigest: "receipt-2")
        #expect(try await store.assetUpload(id: "u1")?.blob == blob)
        #expect(try await store.assetUpload(receiptDigest: "receipt-1")?.id == "u1")
        #expect(try await store.assetUpload(receiptDigest: "receipt-again") == nil)
        #expect(try await store.uploadedBlobIDs(expiringAfter: soon) == ["blob-2"])
        #expect(try await store.uploadedBlobIDs(expiringAfter: Date(milliseconds: 0)) == ["blob-1", "blob-2"])
        try await store.deleteAssetUploads(expiredBefore: Date(milliseconds: 1_700_000_000_001))
        #expect(try await store.assetUpload(id: "u1") == nil)
        #expect(try await store.assetUpload(id: "u2") != nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func zoneKeysListEveryZoneOfAKindAndOwnerBytesCountEveryZone(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let ann = try await account(store, "ann@example.com")
        let bob = try await account(store, "bob@example.com")
        let documents = ZoneAddress.Service.documents(container: "iCloud.com.example.A", environment: "development")
        let zones = [
            ZoneKey(accountID: ann.id, address: ZoneAddress(service: .keyValue, name: "store")),
            ZoneKey(accountID: ann.id, address: ZoneAddress(service: documents, name: "Documents")),
            ZoneKey(accountID: bob.id, address: ZoneAddress(service: documents, name: "Documents")),
        ]
        for (number, zone) in zones.enumerated() {
            _ = try await store.commit(
                zone, mutations: [EntryMutation(key: "k", payload: Data("x".utf8), size: 100 * (number + 1))]
            ) { _ in }
        }
        #expect(Set(try await store.zoneKeys(of: .documents)) == Set(zones.dropFirst()))
        #expect(try await store.zoneKeys(of: .keyValue) == [zones[0]])
        let bytes = try await store.transact(zones[1], creating: false) { transaction in
            let before = try transaction.ownerBytes()
            try transaction.put("more", payload: Data("y".utf8), size: 50)
            return (before, try transaction.ownerBytes())
        }.result
        #expect(bytes.0 == 300, "both of Ann's zones, not Bob's")
        #expect(bytes.1 == 350, "with this transaction's writes")
    }

    @Test(arguments: StoreBackend.allCases)
    func aPeriodicRunIsClaimedOnceAnInterval(_ backend: StoreBackend) async throws {
        let store = try await backend.makeStore()
        let start = Date(milliseconds: 1_700_000_000_000)
        #expect(try await store.claimPeriodicRun("collect", every: 60, now: start), "never run: claimed")
        #expect(try await !store.claimPeriodicRun("collect", every: 60, now: start), "started just now")
        #expect(try await !store.claimPeriodicRun("collect", every: 60, now: start.addingTimeInterval(59.9)))
        #expect(try await store.claimPeriodicRun("expire", every: 60, now: start), "each job has its own turns")
        #expect(try await store.claimPeriodicRun("collect", every: 60, now: start.addingTimeInterval(60)))
        #expect(try await !store.claimPeriodicRun("collect", every: 60, now: start.addingTimeInterval(90)), "counted from then")
        let claims = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask { try await store.claimPeriodicRun("collect", every: 60, now: start.addingTimeInterval(200)) }
            }
            return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(claims == 1, "of claims at one time, one wins")
    }
}
