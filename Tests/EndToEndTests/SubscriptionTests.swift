import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Subscriptions firing over the push socket: query, zone and database subscriptions, fired once or
/// always, in the private and public databases.
@Suite(.cleansUp) struct SubscriptionTests {
    struct Device {
        let container: CloudContainer
        var database: CloudDatabase { container.privateCloudDatabase }
    }

    static func device(_ server: TestServer, _ app: TestServer.SeededApp, email: String = "ann@example.com", name: String)
        async throws -> Device
    {
        let session = try await server.signIn(email: email, device: name)
        return Device(container: CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken))
    }

    static func item(_ name: String, number: Int, zone: RecordZoneID) -> Record {
        var record = Record(recordType: "Items", recordID: RecordID(recordName: name, zoneID: zone))
        record["name"] = name
        record["number"] = number
        return record
    }

    /// A server, and one user's phone and laptop sharing a custom zone the phone created.
    struct Household {
        let server: TestServer
        let app: TestServer.SeededApp
        let phone: Device
        let laptop: Device
        let zone: RecordZoneID

        static func make() async throws -> Household {
            let server = try await TestServer.start()
            let app = try await server.seedApp()
            let phone = try await device(server, app, name: "phone")
            let laptop = try await device(server, app, name: "laptop")
            let zone = try await phone.database.save(RecordZone(zoneName: "Shopping")).zoneID
            return Household(server: server, app: app, phone: phone, laptop: laptop, zone: zone)
        }
    }

    @Test func queryZoneAndDatabaseSubscriptionsFire() async throws {
        let home = try await Household.make()
        let (server, app, phone, laptop, zone) = (home.server, home.app, home.phone, home.laptop, home.zone)
        _ = try await phone.database.save(Self.item("seed", number: 0, zone: zone))  // creates the type

        let bigItems = Subscription.query(
            "big-items", try Query(recordType: "Items", predicate: "number > 2"), zoneID: zone,
            notificationInfo: NotificationInfo(alertBody: "A big item"))
        try await laptop.database.save(bigItems)
        try await laptop.database.save(.zone("shopping", zone))
        try await laptop.database.save(.database("once", firesOnce: true))
        #expect(Set(try await laptop.database.allSubscriptions().map(\.subscriptionID)) == ["big-items", "shopping", "once"])

        let listener = laptop.container.notificationListener()
        defer { listener.stop() }
        let received = Recorder(listener.notifications)
        #expect(await eventually { listener.isConnected })

        var big = try await phone.database.save(Self.item("big", number: 5, zone: zone))
        _ = try await phone.database.save(Self.item("small", number: 1, zone: zone))
        big["number"] = 6
        big = try await phone.database.save(big)
        try await phone.database.deleteRecord(withID: big.recordID)

        let created = await received.first { $0.subscriptionID == "big-items" && $0.queryNotificationReason == .recordCreated }
        #expect(created?.recordName == "big" && created?.notificationInfo?.alertBody == "A big item")
        #expect(await received.first { $0.subscriptionID == "big-items" && $0.queryNotificationReason == .recordUpdated } != nil)
        #expect(await received.first { $0.subscriptionID == "big-items" && $0.queryNotificationReason == .recordDeleted } != nil)
        #expect(await received.first { $0.subscriptionID == "shopping" && $0.notificationType == .recordZone } != nil)
        #expect(await eventually { received.all.filter { $0.subscriptionID == "shopping" }.count == 4 })
        #expect(!received.all.contains { $0.recordName == "small" }, "small items do not match number > 2")
        #expect(received.all.filter { $0.subscriptionID == "once" }.count == 1)
        #expect(!(try await laptop.database.allSubscriptions().map(\.subscriptionID).contains("once")))

        // Another user's changes never reach this user's subscriptions.
        let bob = try await Self.device(server, app, email: "bob@example.com", name: "bob's phone")
        let bobsZone = try await bob.database.save(RecordZone(zoneName: "Shopping")).zoneID
        _ = try await bob.database.save(Self.item("bobs", number: 9, zone: bobsZone))
        _ = try await phone.database.save(Self.item("last", number: 7, zone: zone))
        #expect(await received.first { $0.recordName == "last" } != nil)
        #expect(!received.all.contains { $0.recordName == "bobs" })
    }

    @Test func aTextSearchSubscriptionFiresForItsWords() async throws {
        let home = try await Household.make()
        let (phone, laptop, zone) = (home.phone, home.laptop, home.zone)
        _ = try await phone.database.save(Self.item("seed", number: 0, zone: zone))  // creates the type
        try await laptop.database.save(
            Subscription.query("milky", try Query(recordType: "Items", predicate: "self CONTAINS 'MILK'"), zoneID: zone))
        let listener = laptop.container.notificationListener()
        defer { listener.stop() }
        let received = Recorder(listener.notifications)
        #expect(await eventually { listener.isConnected })

        var bread = Self.item("bread", number: 1, zone: zone)
        bread["note"] = "goes with butter"  // a text field the type did not have yet
        _ = try await phone.database.save(bread)
        var oat = Self.item("oat", number: 2, zone: zone)
        oat["note"] = "oat milk, unsweetened"
        _ = try await phone.database.save(oat)
        _ = try await phone.database.save(Self.item("milk chocolate", number: 3, zone: zone))

        #expect(await received.first { $0.recordName == "milk chocolate" } != nil)
        #expect(received.all.map(\.recordName) == ["oat", "milk chocolate"], "bread's words do not include milk")
    }

    @Test func databaseSubscriptionsHearOfCustomZonesOnly() async throws {
        let home = try await Household.make()
        let (phone, laptop, zone) = (home.phone, home.laptop, home.zone)
        try await laptop.database.save(.database("every"))
        try await laptop.database.save(.zone("marker", zone))
        let listener = laptop.container.notificationListener()
        defer { listener.stop() }
        let heard = Recorder(listener.notifications)
        #expect(await eventually { listener.isConnected })

        // A write to the default zone, then one to the custom zone: once the latter is heard, the
        // former would have been.
        _ = try await phone.database.save(Self.item("loose", number: 1, zone: .default))
        _ = try await phone.database.save(Self.item("milk", number: 1, zone: zone))
        _ = await heard.first { $0.subscriptionID == "marker" }
        let every = heard.all.filter { $0.subscriptionID == "every" }
        #expect(!every.contains { $0.zoneID.zoneName == "_defaultZone" })
        #expect(await eventually { heard.all.contains { $0.subscriptionID == "every" && $0.zoneID.zoneName == "Shopping" } })
    }

    @Test func publicQuerySubscriptionsSeeEveryonesRecords() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let ann = try await Self.device(server, app, name: "phone")
        let bob = try await Self.device(server, app, email: "bob@example.com", name: "laptop")
        var first = Record(recordType: "Posts")
        first["text"] = "first"
        _ = try await ann.container.publicCloudDatabase.save(first)
        try await bob.container.publicCloudDatabase.save(.query("posts", try Query(recordType: "Posts"), firesOn: [.create]))
        let badZone = Subscription.zone("zone", .default)
        await #expect(throws: NimbusError.self) { try await bob.container.publicCloudDatabase.save(badZone) }

        let listener = bob.container.notificationListener()
        defer { listener.stop() }
        let received = Recorder(listener.notifications)
        #expect(await eventually { listener.isConnected })
        var post = Record(recordType: "Posts")
        post["text"] = "hello"
        post = try await ann.container.publicCloudDatabase.save(post)
        let notification = await received.first { _ in true }
        #expect(notification?.recordName == post.recordID.recordName && notification?.databaseScope == "public")
    }
}
