import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Sharing a record hierarchy: a root record and everything under it by `parent` appear in participants'
/// shared databases; the rest of the zone stays invisible to them, and records leaving the hierarchy
/// leave their view.
@Suite(.cleansUp) struct HierarchySharingTests {
    static func record(_ type: String, _ name: String, zone: RecordZoneID, parent: String? = nil) -> Record {
        var record = Record(recordType: type, recordID: RecordID(recordName: name, zoneID: zone))
        record["name"] = name
        record.parent = parent.map { Reference(recordID: RecordID(recordName: $0, zoneID: zone), action: .none) }
        return record
    }

    static func names(_ records: [Record]) -> [String] { records.map(\.recordID.recordName).sorted() }

    /// A server; ann's zone "Trips" holding `records` as (type, name, parent), saved in order; and the
    /// containers of ann and the other users named.
    struct Trips {
        let server: TestServer
        let users: [CloudContainer]
        let zone: RecordZoneID
        var owner: CloudDatabase { users[0].privateCloudDatabase }
    }

    static func trips(users: [String], records: [(String, String, String?)]) async throws -> Trips {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        var containers = [CloudContainer]()
        for user in ["ann"] + users { containers.append(try await SharingTests.container(server, app, "\(user)@example.com")) }
        let zone = try await containers[0].privateCloudDatabase.save(RecordZone(zoneName: "Trips")).zoneID
        for (type, name, parent) in records {
            _ = try await containers[0].privateCloudDatabase.save(Self.record(type, name, zone: zone, parent: parent))
        }
        return Trips(server: server, users: containers, zone: zone)
    }

    @Test func participantsSeeAndChangeOnlyTheSharedHierarchy() async throws {
        let trips = try await Self.trips(
            users: ["bob", "cat", "eve"],
            records: [
                ("Lists", "japan", nil), ("Items", "passport", "japan"), ("Items", "yen", "japan"), ("Items", "visa", "passport"),
                ("Lists", "secret", nil), ("Items", "gift", "secret"),
            ])
        let (bob, cat, eve, owner, zone) = (trips.users[1], trips.users[2], trips.users[3], trips.owner, trips.zone)
        let share = try await owner.share(
            RecordID(recordName: "japan", zoneID: zone),
            with: [
                .init(emailAddress: "bob@example.com", permission: .readWrite),
                .init(emailAddress: "cat@example.com", permission: .readOnly),
            ])
        #expect(share.rootRecordID?.recordName == "japan" && share.participants.count == 2)
        #expect(
            try await owner.record(for: RecordID(recordName: "japan", zoneID: zone)).share?.recordID.recordName
                == share.recordID.recordName)
        // Sharing again replaces the participants of the same share.
        let again = try await owner.share(
            RecordID(recordName: "japan", zoneID: zone),
            with: [
                .init(emailAddress: "bob@example.com", permission: .readWrite),
                .init(emailAddress: "cat@example.com", permission: .readOnly),
            ])
        #expect(again.recordID.recordName == share.recordID.recordName)

        let shared = try await bob.sharedCloudDatabase.acceptShare(share.shortGUID)
        _ = try await cat.sharedCloudDatabase.acceptShare(share.shortGUID)
        await #expect(throws: NimbusError.self) { _ = try await eve.sharedCloudDatabase.acceptShare(share.shortGUID) }
        let participant = bob.sharedCloudDatabase
        #expect(try await participant.allRecordZones().map(\.zoneID) == [shared])
        // The share as it stands, for its owner and for a participant: both accepted.
        let standing = try await owner.fetchShare(share.recordID)
        #expect(standing.rootRecordID?.recordName == "japan" && standing.participants.map(\.accepted) == [true, true])
        let seenByBob = try await participant.fetchShare(RecordID(recordName: share.recordID.recordName, zoneID: shared))
        #expect(seenByBob.participants.map(\.emailAddress) == ["bob@example.com", "cat@example.com"])
        await #expect(throws: NimbusError.self) { _ = try await owner.fetchShare(RecordID(recordName: "japan", zoneID: zone)) }

        // Queries, lookups and the change feed hold the hierarchy and nothing else of the zone.
        #expect(
            Self.names(try await participant.allRecords(matching: Query(recordType: "Items"), inZoneWith: shared)) == [
                "passport", "visa", "yen",
            ])
        #expect(
            Self.names(try await participant.allRecords(matching: Query(recordType: "Lists"), inZoneWith: shared)) == ["japan"])
        await #expect(throws: NimbusError.self) {
            _ = try await participant.record(for: RecordID(recordName: "gift", zoneID: shared))
        }
        await #expect(throws: NimbusError.self) {
            _ = try await participant.record(for: RecordID(recordName: "secret", zoneID: shared))
        }
        let first = try await participant.recordZoneChanges(inZoneWith: shared, since: nil)
        #expect(Self.names(first.modifications) == ["japan", "passport", share.recordID.recordName, "visa", "yen"].sorted())
        #expect(first.deletions.isEmpty)

        // A read-write participant adds under the hierarchy and changes its records, but not outside it,
        // and does not delete the root; a read-only participant writes nothing.
        let railPass = try await participant.save(Self.record("Items", "rail-pass", zone: shared, parent: "japan"))
        #expect(railPass.creatorUserRecordName == (try await bob.userRecordName()))
        #expect(try await owner.record(for: RecordID(recordName: "rail-pass", zoneID: zone))["name"] == "rail-pass")
        var renamed = try await participant.record(for: RecordID(recordName: "japan", zoneID: shared))
        renamed["name"] = "Japan 2027"
        _ = try await participant.save(renamed)
        for refused in [
            Self.record("Items", "loose", zone: shared), Self.record("Items", "sneak", zone: shared, parent: "secret"),
        ] {
            await #expect(throws: NimbusError.self) { _ = try await participant.save(refused) }
        }
        await #expect(throws: NimbusError.self) {
            _ = try await participant.save(Self.record("Items", "gift", zone: shared, parent: "japan"))
        }
        await #expect(throws: NimbusError.self) {
            _ = try await participant.deleteRecord(withID: RecordID(recordName: "japan", zoneID: shared))
        }
        _ = try await participant.deleteRecord(withID: RecordID(recordName: "yen", zoneID: shared))
        await #expect(throws: NimbusError.self) {
            _ = try await cat.sharedCloudDatabase.save(Self.record("Items", "cake", zone: shared, parent: "japan"))
        }
        #expect(
            try await owner.record(for: RecordID(recordName: "gift", zoneID: zone))["name"] == "gift",
            "the unshared record is untouched")
        #expect(try await owner.record(for: RecordID(recordName: "japan", zoneID: zone))["name"] == "Japan 2027")

        // A record in the hierarchy cannot root another share.
        await #expect(throws: NimbusError.self) {
            _ = try await owner.share(
                RecordID(recordName: "rail-pass", zoneID: zone),
                with: [.init(emailAddress: "cat@example.com", permission: .readOnly)])
        }

        // The owner moves visa out and deletes passport; changes elsewhere in the zone stay unseen.
        let token = try await participant.recordZoneChanges(inZoneWith: shared, since: first.changeToken).changeToken
        var visa = try await owner.record(for: RecordID(recordName: "visa", zoneID: zone))
        visa.parent = Reference(recordID: RecordID(recordName: "secret", zoneID: zone), action: .none)
        _ = try await owner.save(visa)
        var gift = try await owner.record(for: RecordID(recordName: "gift", zoneID: zone))
        gift["name"] = "surprise"
        _ = try await owner.save(gift)
        _ = try await owner.deleteRecord(withID: RecordID(recordName: "passport", zoneID: zone))
        // A record of the same name made again outside the share does not hide the deletion.
        _ = try await owner.save(Self.record("Items", "passport", zone: zone))
        let later = try await participant.recordZoneChanges(inZoneWith: shared, since: token)
        #expect(later.modifications.isEmpty)
        #expect(later.deletions.map(\.recordName).sorted() == ["passport", "visa"])
        #expect(
            Self.names(try await participant.allRecords(matching: Query(recordType: "Items"), inZoneWith: shared)) == [
                "rail-pass"
            ])
        await #expect(throws: NimbusError.self) {
            _ = try await participant.record(for: RecordID(recordName: "visa", zoneID: shared))
        }

        // Ending the share takes the zone out of participants' shared databases.
        try await owner.unshare(share)
        #expect(try await participant.allRecordZones().isEmpty)
        await #expect(throws: NimbusError.self) {
            _ = try await participant.allRecords(matching: Query(recordType: "Items"), inZoneWith: shared)
        }
        #expect(try await owner.record(for: RecordID(recordName: "japan", zoneID: zone)).share == nil)
    }

    @Test func deletingTheRootEndsTheShare() async throws {
        let trips = try await Self.trips(users: ["bob"], records: [("Lists", "japan", nil), ("Items", "passport", "japan")])
        let (ann, bob, zone) = (trips.users[0], trips.users[1], trips.zone)
        let share = try await ann.privateCloudDatabase.share(
            RecordID(recordName: "japan", zoneID: zone), with: [.init(emailAddress: "bob@example.com", permission: .readOnly)])
        let shared = try await bob.sharedCloudDatabase.acceptShare(share.shortGUID)
        let before = try await bob.sharedCloudDatabase.recordZoneChanges(inZoneWith: shared, since: nil)
        #expect(before.modifications.count == 3)

        _ = try await ann.privateCloudDatabase.deleteRecord(withID: RecordID(recordName: "japan", zoneID: zone))
        await #expect(throws: NimbusError.self) { _ = try await ann.privateCloudDatabase.record(for: share.recordID) }
        #expect(try await bob.sharedCloudDatabase.allRecordZones().isEmpty)
        #expect(
            try await ann.privateCloudDatabase.record(for: RecordID(recordName: "passport", zoneID: zone))["name"] == "passport")
    }

    @Test func sharedDatabaseSubscriptionsHearOnlyOfSharedRecords() async throws {
        let trips = try await Self.trips(
            users: ["bob"], records: [("Lists", "secret", nil), ("Lists", "japan", nil), ("Items", "passport", "japan")])
        let (ann, bob, zone) = (trips.users[0], trips.users[1], trips.zone)
        var secret = try await ann.privateCloudDatabase.record(for: RecordID(recordName: "secret", zoneID: zone))
        let passportID = RecordID(recordName: "passport", zoneID: zone)
        let share = try await ann.privateCloudDatabase.share(
            RecordID(recordName: "japan", zoneID: zone), with: [.init(emailAddress: "bob@example.com", permission: .readOnly)])
        let shared = try await bob.sharedCloudDatabase.acceptShare(share.shortGUID)
        // Sharing gave the hierarchy's records new versions.
        var passport = try await ann.privateCloudDatabase.record(for: passportID)

        // The shared database has database subscriptions only, as CloudKit's.
        await #expect(throws: NimbusError.self) { try await bob.sharedCloudDatabase.save(.zone("trips", shared)) }
        try await bob.sharedCloudDatabase.save(.database("shared-changes"))
        #expect(try await bob.sharedCloudDatabase.allSubscriptions().map(\.subscriptionID) == ["shared-changes"])
        #expect(try await bob.privateCloudDatabase.allSubscriptions().isEmpty, "the shared database's subscriptions are its own")
        let bobsZone = try await bob.privateCloudDatabase.save(RecordZone(zoneName: "Mine")).zoneID
        try await bob.privateCloudDatabase.save(.zone("mine", bobsZone))

        let listener = bob.notificationListener()
        defer { listener.stop() }
        let heard = Recorder(listener.notifications)
        #expect(await eventually { listener.isConnected })
        // A change outside the share, one inside it, then one in bob's own zone: by the time the last is
        // heard, everything before it has been.
        secret["name"] = "still secret"
        secret = try await ann.privateCloudDatabase.save(secret)
        passport["name"] = "passport (renewed)"
        passport = try await ann.privateCloudDatabase.save(passport)
        _ = try await bob.privateCloudDatabase.save(Self.record("Items", "note", zone: bobsZone))
        _ = await heard.first { $0.subscriptionID == "mine" }
        let sharedChanges = heard.all.filter { $0.subscriptionID == "shared-changes" }
        #expect(sharedChanges.count == 1)
        #expect(
            sharedChanges.first?.databaseScope == "shared"
                && sharedChanges.first?.zoneID == ZoneID(zoneName: "Trips", ownerRecordName: shared.ownerName))
    }

    @Test func aParticipantsTokensExpireWhenWhatIsSharedWithThemChanges() async throws {
        let trips = try await Self.trips(
            users: ["bob"],
            records: [
                ("Lists", "japan", nil), ("Items", "passport", "japan"), ("Lists", "peru", nil), ("Items", "boots", "peru"),
            ])
        let (bob, owner, zone) = (trips.users[1], trips.owner, trips.zone)
        let bobsShare = [Share.Participant(emailAddress: "bob@example.com", permission: .readOnly)]
        let japan = try await owner.share(RecordID(recordName: "japan", zoneID: zone), with: bobsShare)
        let shared = try await bob.sharedCloudDatabase.acceptShare(japan.shortGUID)
        let first = try await bob.sharedCloudDatabase.recordZoneChanges(inZoneWith: shared, since: nil)
        #expect(Self.names(first.modifications) == ["japan", japan.recordID.recordName, "passport"].sorted())

        // A second share of the same zone: records older than bob's token join his view, so the token expires.
        let peru = try await owner.share(RecordID(recordName: "peru", zoneID: zone), with: bobsShare)
        _ = try await bob.sharedCloudDatabase.acceptShare(peru.shortGUID)
        await #expect(throws: NimbusError.self) {
            _ = try await bob.sharedCloudDatabase.recordZoneChanges(inZoneWith: shared, since: first.changeToken)
        }
        let again = try await bob.sharedCloudDatabase.recordZoneChanges(inZoneWith: shared, since: nil)
        #expect(Self.names(again.modifications).contains("boots"))

        // Losing one share while keeping the other expires it too: the fresh fetch no longer holds japan.
        try await owner.unshare(japan)
        do {
            _ = try await bob.sharedCloudDatabase.recordZoneChanges(inZoneWith: shared, since: again.changeToken)
            Issue.record("the token should have expired")
        } catch let error as NimbusError {
            #expect(error.code == .changeTokenExpired)
        }
        let last = try await bob.sharedCloudDatabase.recordZoneChanges(inZoneWith: shared, since: nil)
        #expect(!Self.names(last.modifications).contains("japan") && Self.names(last.modifications).contains("peru"))
        #expect(try await bob.sharedCloudDatabase.allRecordZones().map(\.zoneID) == [shared])
    }
}
