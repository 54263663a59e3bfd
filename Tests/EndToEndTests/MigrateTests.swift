import Foundation
import NimbusCore
import NimbusKit
import NimbusPostgres
import NimbusServer
import NimbusStore
import NimbusTesting
import NimbusTestingCore
import Testing

/// `nimbus migrate` as an operator runs it: a single-node install moves to PostgreSQL, and its devices
/// go on where they were.
@Suite(.cleansUp) struct MigrateTests {
    @Test func aSingleNodeInstallMovesToPostgreSQLAndItsDevicesGoOn() async throws {
        let sqlite = try await TestServer.start()
        let app = try await sqlite.seedApp()
        let session = try await sqlite.signIn(email: "ann@example.com", device: "phone")
        let values = app.keyValueClient(session)
        let written = try await values.modify([.set("theme", .string("dark")), .set("volume", .int64(7))])
        let notes = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        let zone = try await notes.save(RecordZone(zoneName: "Notes"))
        var records = [Record]()
        for (title, rank) in [("first", 1), ("second", 2), ("third", 3)] {
            var note = Record(recordType: "Notes", zoneID: zone.zoneID)
            note["title"] = title
            note["rank"] = rank
            note["place"] = Location(latitude: 48.85 + Double(rank), longitude: 2.35)
            records.append(note)
        }
        _ = try await notes.modifyRecords(saving: records, deleting: [])
        let (port, data) = (sqlite.port, sqlite.dataDirectory)
        await sqlite.stop()

        let url = try await TemporaryPostgres.shared().database()
        let migrated = try await DataCommandLineTests.nimbus(["migrate", "--from", data.path, "--to", url])
        #expect(migrated.status == 0, "\(migrated.stdout)\(migrated.stderr)")
        #expect(migrated.stdout.contains("Copied and verified"), "\(migrated.stdout)")

        // The SQLite database no longer serves, so the two copies cannot drift apart.
        await #expect(throws: StoreConfigurationError.self) { try await TestServer.start(dataDirectory: data) }

        let postgres = try await TestServer.start(dataDirectory: data, port: port) {
            $0.storage = .postgres(try! PostgresLocation(url: url), connections: 4)
        }
        defer { Task { await postgres.stop() } }
        // The same session, the same change token: nothing new to fetch, and the values as they were.
        let changes = try await values.changes(since: written.syncToken)
        #expect(changes.changes.isEmpty && !changes.moreComing)
        #expect(try await values.values().values == ["theme": .string("dark"), "volume": .int64(7)])
        let next = try await values.modify([.set("volume", .int64(8))])
        #expect(next.sequence == written.sequence + 1, "the zone's sequence goes on from where it was")
        // Records and their index: found by field, sorted, and by distance.
        var query = try Query(recordType: "Notes", predicate: "rank > 1")
        query.sortDescriptors = [.init(key: "rank", ascending: false)]
        let ranked = try await notes.records(matching: query, inZoneWith: zone.zoneID).matchResults
        #expect(ranked.map { $0["title"] as String? } == ["third", "second"])
        let near = try await notes.records(
            matching: try Query(
                recordType: "Notes", predicate: "distanceToLocation:fromLocation:(place, %@) < 1000",
                Location(latitude: 49.85, longitude: 2.35)),
            inZoneWith: zone.zoneID
        ).matchResults
        #expect(near.map { $0["title"] as String? } == ["first"])

        // A second copy into the same database would overwrite what the nodes wrote since: refused.
        let again = try await DataCommandLineTests.nimbus(["migrate", "--from", data.path, "--to", url])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already holds data"), "\(again.stderr)")
        let missing = try await DataCommandLineTests.nimbus([
            "migrate", "--from", TestServer.temporaryDirectory().path, "--to", url,
        ])
        #expect(missing.status == 1 && missing.stderr.contains("no Nimbus database"), "\(missing.stderr)")
    }
}
