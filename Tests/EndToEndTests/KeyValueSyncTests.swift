import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Synchronization
import Testing

/// Two devices of one user, each a real `UbiquitousKeyValueStore` with its own local copy, syncing
/// through one server, and through three behind a load balancer.
@Suite(.cleansUp) struct KeyValueSyncTests {
    struct World {
        let deployment: TestDeployment
        let app: TestServer.SeededApp

        static func make(_ shape: TestDeployment.Shape) async throws -> World {
            let deployment = try await TestDeployment.start(shape)
            return World(deployment: deployment, app: try await deployment.seedApp())
        }

        func device(_ name: String, email: String = "ann@example.com", directory: URL? = nil) async throws
            -> UbiquitousKeyValueStore
        {
            let session = try await deployment.signIn(email: email, device: name)
            return try deployment.keyValueStore(session, app: app, localDirectory: directory)
        }
    }

    @Test(arguments: TestDeployment.Shape.allCases) func aKeySetOnOneDeviceArrivesOnTheOtherByPush(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await World.make(shape)
        let phone = try await world.device("phone")
        let laptop = try await world.device("laptop")
        let laptopEvents = Recorder(laptop.changes())
        phone.start()
        laptop.start()
        #expect(await phone.synchronize())
        #expect(await laptop.synchronize())
        #expect(await eventually { laptop.isPushConnected && phone.isPushConnected })
        #expect(await phone.synchronize())
        #expect(world.deployment.pushConnectionCount == 2, "one push socket per device, however often it syncs")

        phone.set("chapter 3", forKey: "bookmark")
        phone.set(Int64(42), forKey: "answer")
        let event = await laptopEvents.first { $0.reason == .serverChange }
        #expect(event?.changedKeys == ["answer", "bookmark"] || event?.changedKeys == ["bookmark"])
        #expect(await eventually { laptop.string(forKey: "bookmark") == "chapter 3" && laptop.longLong(forKey: "answer") == 42 })
        #expect(phone.dictionaryRepresentation == laptop.dictionaryRepresentation)
        phone.close()
        laptop.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func everyValueTypeConverges(shape: TestDeployment.Shape) async throws {
        let world = try await World.make(shape)
        let phone = try await world.device("phone")
        let laptop = try await world.device("laptop")
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        phone.set("text", forKey: "string")
        phone.set(Int64(-7), forKey: "int")
        phone.set(2.5, forKey: "double")
        phone.set(true, forKey: "bool")
        phone.set(date, forKey: "date")
        phone.set(Data([1, 2, 3]), forKey: "data")
        phone.set([.string("a"), .int64(1)], forKey: "array")
        phone.set(["nested": .dictionary(["deep": .bool(false)])], forKey: "dictionary")
        #expect(await phone.synchronize())
        #expect(await laptop.synchronize())
        #expect(laptop.string(forKey: "string") == "text")
        #expect(laptop.longLong(forKey: "int") == -7)
        #expect(laptop.double(forKey: "double") == 2.5)
        #expect(laptop.bool(forKey: "bool"))
        #expect(laptop.date(forKey: "date") == date)
        #expect(laptop.data(forKey: "data") == Data([1, 2, 3]))
        #expect(laptop.array(forKey: "array") == [.string("a"), .int64(1)])
        #expect(laptop.dictionary(forKey: "dictionary") == ["nested": .dictionary(["deep": .bool(false)])])
        phone.removeObject(forKey: "string")
        #expect(await phone.synchronize())
        #expect(await laptop.synchronize())
        #expect(laptop.string(forKey: "string") == nil)
        #expect(laptop.dictionaryRepresentation == phone.dictionaryRepresentation)
        phone.close()
        laptop.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func anOfflineDeviceCatchesUpWhenItComesBack(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await World.make(shape)
        let laptopDirectory = TestServer.temporaryDirectory()
        let phone = try await world.device("phone")
        let laptopBefore = try await world.device("laptop", directory: laptopDirectory)
        #expect(await laptopBefore.synchronize())
        laptopBefore.close()

        // Each write syncs the local copy to disk: many in a row block a thread for a while, so not the task's.
        try await onOwnThread {
            for index in 0..<50 { phone.set(Int64(index), forKey: "k\(index)") }
            phone.removeObject(forKey: "k0")
        }
        #expect(await phone.synchronize())

        let laptop = try await world.device("laptop", directory: laptopDirectory)
        let events = Recorder(laptop.changes())
        laptop.start()
        let event = await events.first { $0.reason == .serverChange }
        #expect(event?.changedKeys.count == 49)
        #expect(laptop.dictionaryRepresentation == phone.dictionaryRepresentation)
        #expect(laptop.object(forKey: "k0") == nil)
        phone.close()
        laptop.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func writesWorkOfflineSurviveARestartAndUploadLater(
        shape: TestDeployment.Shape
    ) async throws {
        let directory = TestServer.temporaryDirectory()
        let deployment = try await TestDeployment.start(shape)
        let app = try await deployment.seedApp()
        let session = try await deployment.signIn(email: "ann@example.com", device: "phone")
        await deployment.stop()

        // The server is gone: writes still apply locally and persist.
        let offline = try deployment.keyValueStore(session, app: app, localDirectory: directory)
        offline.set("written offline", forKey: "note")
        #expect(await offline.synchronize() == false)
        #expect(offline.hasPendingWrites)
        offline.close()

        // The app restarts: the write is still there, still pending.
        let phone = try deployment.keyValueStore(session, app: app, localDirectory: directory)
        #expect(phone.string(forKey: "note") == "written offline")
        #expect(phone.hasPendingWrites)
        phone.start()

        // The server comes back (same data, same address): the write uploads.
        try await deployment.restart()
        #expect(await eventually(timeout: .seconds(30)) { !phone.hasPendingWrites })
        let laptop = try deployment.keyValueStore(
            try await deployment.signIn(email: "ann@example.com", device: "laptop"), app: app)
        #expect(await laptop.synchronize())
        #expect(laptop.string(forKey: "note") == "written offline")
        phone.close()
        laptop.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func concurrentWritersConvergeOnTheLastArrival(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await World.make(shape)
        let phone = try await world.device("phone")
        let laptop = try await world.device("laptop")
        // Both write the same key while neither has synced; the laptop's write reaches the server last.
        phone.set("phone's", forKey: "title")
        laptop.set("laptop's", forKey: "title")
        #expect(await phone.synchronize())
        #expect(await laptop.synchronize())
        #expect(await phone.synchronize())
        #expect(phone.string(forKey: "title") == "laptop's")
        #expect(laptop.string(forKey: "title") == "laptop's")
        phone.close()
        laptop.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func writesBeforeTheFirstSyncAreKeptAndWin(shape: TestDeployment.Shape)
        async throws
    {
        let world = try await World.make(shape)
        let phone = try await world.device("phone")
        phone.set("server's", forKey: "shared")
        phone.set("only on server", forKey: "other")
        #expect(await phone.synchronize())

        let tablet = try await world.device("tablet")
        let events = Recorder(tablet.changes())
        tablet.set("tablet's", forKey: "shared")
        #expect(await tablet.synchronize())
        let initial = await events.first { $0.reason == .initialSyncChange }
        #expect(initial?.changedKeys == ["other"], "the tablet's own key kept its value, so only 'other' changed")
        #expect(tablet.string(forKey: "shared") == "tablet's")
        #expect(await phone.synchronize())
        #expect(phone.string(forKey: "shared") == "tablet's")
        phone.close()
        tablet.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func writesBreakingALimitAreRefusedWithAQuotaEvent(
        shape: TestDeployment.Shape
    ) async throws {
        let world = try await World.make(shape)
        let phone = try await world.device("phone")
        let events = Recorder(phone.changes())
        phone.set("x", forKey: String(repeating: "k", count: 65))
        let local = await events.first { $0.reason == .quotaViolationChange }
        #expect(local != nil)
        #expect(phone.dictionaryRepresentation.isEmpty)

        // A tablet that has not seen the phone's keys yet writes past the key limit: the server refuses it.
        let tabletDirectory = TestServer.temporaryDirectory()
        let tablet = try await world.device("tablet", directory: tabletDirectory)
        try await onOwnThread { for index in 0..<10 { tablet.set(true, forKey: "tablet\(index)") } }
        let tabletEvents = Recorder(tablet.changes())
        // A thousand synced writes of the local copy: seconds of blocking, on a thread of their own (two such
        // loops on the cooperative threads once starved every server of the suite for 20 s).
        try await onOwnThread { for index in 0..<1020 { phone.set(Int64(index), forKey: "p\(index)") } }
        #expect(await phone.synchronize())
        #expect(await tablet.synchronize())
        let refused = await tabletEvents.first { $0.reason == .quotaViolationChange }
        #expect(refused?.changedKeys.count == 10)
        #expect(tablet.object(forKey: "tablet0") == nil)
        #expect(tablet.dictionaryRepresentation.count == 1020)
        #expect(!tablet.hasPendingWrites)
        phone.close()
        tablet.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func anExpiredSessionIsReportedAndLocalWritesWait(
        shape: TestDeployment.Shape
    ) async throws {
        let deployment = try await TestDeployment.start(shape) { $0.sessionLifetime = .seconds(60) }
        let app = try await deployment.seedApp()
        let phone = try deployment.keyValueStore(
            try await deployment.signIn(email: "ann@example.com", device: "phone"), app: app)
        #expect(await phone.synchronize())
        #expect(phone.lastSyncError == nil)
        deployment.clock.advance(by: 61)
        phone.set("after expiry", forKey: "note")
        #expect(await phone.synchronize() == false)
        #expect(phone.lastSyncError?.code == .authenticationFailed)
        #expect(phone.string(forKey: "note") == "after expiry")
        #expect(phone.hasPendingWrites)
        phone.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func anotherAccountOnTheSameDeviceReplacesTheValuesAndLosesNoPendingWrite(
        shape: TestDeployment.Shape
    ) async throws {
        let world = try await World.make(shape)
        let directory = TestServer.temporaryDirectory()
        let annSession = try await world.deployment.signIn(email: "ann@example.com", device: "shared iPad")
        let annStore = try world.deployment.keyValueStore(annSession, app: world.app, localDirectory: directory)
        annStore.set("ann's", forKey: "owner")
        #expect(await annStore.synchronize())
        annStore.close()
        // Written while offline, then someone else signs in on the iPad before it could upload.
        let offline = try world.deployment.keyValueStore(annSession, app: world.app, localDirectory: directory)
        offline.set("unsent", forKey: "draft")
        offline.close()

        let bob = try await world.deployment.signIn(email: "bob@example.com", device: "shared iPad")
        let bobStore = try world.deployment.keyValueStore(bob, app: world.app, localDirectory: directory)
        #expect(bobStore.dictionaryRepresentation.isEmpty, "one account's values never show under another")
        let events = Recorder(bobStore.changes())
        #expect(await bobStore.synchronize())
        let event = await events.first { $0.reason == .accountChange }
        #expect(event?.changedKeys == ["draft", "owner"])
        bobStore.close()

        let annAgain = try world.deployment.keyValueStore(annSession, app: world.app, localDirectory: directory)
        #expect(annAgain.string(forKey: "draft") == "unsent")
        #expect(await annAgain.synchronize())
        let annLaptop = try world.deployment.keyValueStore(
            try await world.deployment.signIn(email: "ann@example.com", device: "laptop"), app: world.app)
        #expect(await annLaptop.synchronize())
        #expect(annLaptop.string(forKey: "draft") == "unsent")
        annAgain.close()
        annLaptop.close()
    }
}

/// What happens to devices and acknowledged writes when the servers go away and come back.
@Suite(.cleansUp) struct ServerRestartTests {
    @Test(arguments: TestDeployment.Shape.allCases) func aRunningDeviceReconnectsAfterAServerRestartAndMissesNothing(
        shape: TestDeployment.Shape
    ) async throws {
        let deployment = try await TestDeployment.start(shape)
        let app = try await deployment.seedApp()
        let laptop = try deployment.keyValueStore(
            try await deployment.signIn(email: "ann@example.com", device: "laptop"), app: app)
        let phoneSession = try await deployment.signIn(email: "ann@example.com", device: "phone")
        let events = Recorder(laptop.changes())
        laptop.start()
        #expect(await laptop.synchronize())
        #expect(await eventually { laptop.isPushConnected })
        await deployment.stop()
        #expect(await eventually { !laptop.isPushConnected })

        try await deployment.restart()
        let phone = try deployment.keyValueStore(phoneSession, app: app)
        phone.set("while you were away", forKey: "news")
        #expect(await phone.synchronize())
        let event = await events.first(timeout: .seconds(30)) { $0.changedKeys.contains("news") }
        #expect(event?.reason == .serverChange)
        #expect(laptop.string(forKey: "news") == "while you were away")
        phone.close()
        laptop.close()
    }

    @Test(arguments: TestDeployment.Shape.allCases) func gracefulShutdownLosesNoAcknowledgedWrite(
        shape: TestDeployment.Shape
    ) async throws {
        let deployment = try await TestDeployment.start(shape)
        let app = try await deployment.seedApp()
        let session = try await deployment.signIn(email: "ann@example.com", device: "phone")
        let client = app.keyValueClient(session)
        let acknowledgements = Acknowledgements()
        let writers = Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<300 {
                    group.addTask {
                        if (try? await client.modify([.set("key\(index)", .int64(Int64(index)))])) != nil {
                            acknowledgements.add(index)
                        }
                    }
                }
            }
        }
        #expect(await eventually { !acknowledgements.all.isEmpty })
        await deployment.stop()
        await writers.value
        let acknowledged = acknowledgements.all
        #expect(!acknowledged.isEmpty)

        try await deployment.restart()
        let reader = app.keyValueClient(try await deployment.signIn(email: "ann@example.com", device: "phone"))
        let stored = try await reader.values().values
        for index in acknowledged { #expect(stored["key\(index)"] == .int64(Int64(index))) }
    }
}

extension ServerRestartTests {
    /// A request made once a restarted server listens again is answered, though requests made while it
    /// was down are still failing around it (a connection attempt refused then used to fail every request
    /// queued with it, later ones included: three rounds in twenty before the SDK sent refused requests
    /// again). A request to the stopped server still fails as unreachable.
    @Test func aRequestAfterARestartIsAnsweredWhileRequestsMadeDuringTheOutageFail() async throws {
        let deployment = try await TestDeployment.start(.oneNode)
        let app = try await deployment.seedApp()
        let session = try await deployment.signIn(email: "ann@example.com", device: "phone")
        let client = app.keyValueClient(session)
        for _ in 0..<30 {
            let stopped = StopSignal()
            let retrying = Task {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<16 {
                        group.addTask { while !stopped.isRaised { _ = try? await client.values() } }
                    }
                }
            }
            await deployment.stop()
            await #expect { try await client.values() } throws: {
                ($0 as? NimbusError)?.code == .networkUnavailable
            }
            try await deployment.restart()
            await #expect(throws: Never.self) { try await client.values() }
            stopped.raise()
            await retrying.value
        }
    }
}

/// Tells looping tasks to end.
final class StopSignal: Sendable {
    private let raised = Mutex(false)
    var isRaised: Bool { raised.withLock { $0 } }
    func raise() { raised.withLock { $0 = true } }
}

/// Indexes of writes the server acknowledged, collected from concurrent tasks.
final class Acknowledgements: Sendable {
    private let indexes = Mutex<[Int]>([])
    func add(_ index: Int) { indexes.withLock { $0.append(index) } }
    var all: [Int] { indexes.withLock { $0 } }
}
