import Foundation
import NimbusCore
import NimbusKit
import NimbusPostgres
import NimbusStore
import NimbusTesting
import NimbusTestingCore
import Synchronization
import Testing

/// Nodes on one PostgreSQL database when something fails under them: the database restarting while clients
/// write, a node killed mid-write. Clients are told to try again later (never an internal error), and no
/// acknowledged write is lost.
@Suite(.cleansUp) struct NodeFaultTests {
    /// Key-value writers through two nodes, until stopped: each writer sets its own key to 1, 2, 3, … (a
    /// store's keys are limited; its values are not), and what each write got is kept.
    final class Writers: Sendable {
        /// What the writers saw, shared by their tasks.
        final class Outcomes: Sendable {
            /// Each writer's key and the last value acknowledged for it, and how many writes through each node
            /// were acknowledged.
            let acknowledged = Mutex<(last: [String: Int64], counts: [Int])>(([:], [0, 0]))
            let refusals = Mutex<[(client: Int, error: NimbusError)]>([])
            let stopped = Atomic(false)
        }

        private let outcomes = Outcomes()
        private let tasks: Task<Void, Never>

        init(_ clients: [KeyValueClient], perClient: Int = 2) {
            let outcomes = outcomes
            tasks = Task {
                await withTaskGroup(of: Void.self) { group in
                    for (number, client) in clients.enumerated() {
                        for writer in 0..<perClient {
                            group.addTask { await Self.write(through: client, number: number, writer: writer, outcomes) }
                        }
                    }
                }
            }
        }

        private static func write(through client: KeyValueClient, number: Int, writer: Int, _ outcomes: Outcomes) async {
            let key = "node\(number)-writer\(writer)"
            var value: Int64 = 0
            while !outcomes.stopped.load(ordering: .relaxed) {
                value += 1
                do {
                    _ = try await client.modify([.set(key, .int64(value))])
                    outcomes.acknowledged.withLock {
                        $0.last[key] = value
                        $0.counts[number] += 1
                    }
                    // Paced, as an app writes, well below a session's rate limit (two writers share one).
                    try? await Task.sleep(for: .milliseconds(5))
                } catch let error as NimbusError {
                    outcomes.refusals.withLock { $0.append((number, error)) }
                    // As a client does when told to try again: not at once.
                    try? await Task.sleep(for: .milliseconds(50))
                } catch {
                    outcomes.refusals.withLock { $0.append((number, NimbusError(.internalError, "\(error)"))) }
                }
            }
        }

        /// How many writes through each node were acknowledged so far.
        var acknowledgedCounts: [Int] { outcomes.acknowledged.withLock { $0.counts } }
        var acknowledgedCount: Int { acknowledgedCounts.reduce(0, +) }

        /// The writers whose last acknowledged value `stored` lacks (a later one, written but not
        /// acknowledged when the writers stopped, stands for it).
        func lost(in stored: [String: KeyValue]) -> [String] {
            outcomes.acknowledged.withLock { acknowledged in
                acknowledged.last.compactMap { key, value in
                    guard case .int64(let kept)? = stored[key], kept >= value else { return "\(key) = \(value)" }
                    return nil
                }
            }
        }
        /// What was refused, and through which client (0: the first node's).
        var refused: [(client: Int, error: NimbusError)] { outcomes.refusals.withLock { $0 } }

        func stop() async {
            outcomes.stopped.store(true, ordering: .relaxed)
            await tasks.value
        }
    }

    /// Two nodes on the database `location` names, a device signed in through each, and key-value writers
    /// through both, once they have had 20 writes acknowledged.
    static func writingThroughTwoNodes(on location: PostgresLocation) async throws -> ([KeyValueClient], Writers) {
        let data = TestServer.temporaryDirectory()
        var nodes = [TestServer]()
        for _ in 0..<2 {
            nodes.append(
                try await TestServer.start(dataDirectory: data) {
                    $0.storage = .postgres(location, connections: 4)
                    // Real time: a session's rate limit refills with it (the tests' manual clock stands still).
                    $0.now = { Date() }
                })
        }
        let app = try await nodes[0].seedApp()
        var clients = [KeyValueClient]()
        for (number, node) in nodes.enumerated() {
            clients.append(app.keyValueClient(try await node.signIn(email: "ann@example.com", device: "device \(number)")))
        }
        let writers = Writers(clients)
        #expect(await eventually(timeout: .seconds(30)) { writers.acknowledgedCount >= 20 })
        return (clients, writers)
    }

    /// PostgreSQL stops as if its machine were lost, then starts again: meanwhile every write through
    /// either node is answered `TRY_AGAIN_LATER` with a `retryAfter` (no internal error, no hang), and
    /// afterwards both nodes write again without being restarted, with every acknowledged write kept.
    @Test func aDatabaseRestartUnderLoadIsRetriedLaterAndTheNodesRecoverOnTheirOwn() async throws {
        let cluster = try await TemporaryPostgres.dedicated()
        let location = try PostgresLocation(url: try await cluster.database())
        let (clients, writers) = try await Self.writingThroughTwoNodes(on: location)

        try await cluster.stop()
        #expect(
            await eventually(timeout: .seconds(60)) {
                let refused = writers.refused
                return (0..<2).allSatisfy { number in refused.contains { $0.client == number && $0.error.code == .tryAgainLater }
                }
            }, "writes are refused while the database is down")
        let countsWhileDown = writers.acknowledgedCounts
        try await cluster.start()
        #expect(
            await eventually(timeout: .seconds(60)) {
                let counts = writers.acknowledgedCounts
                return (0..<2).allSatisfy { counts[$0] > countsWhileDown[$0] + 10 }
            }, "both nodes write again")
        await writers.stop()

        let refused = writers.refused
        #expect(!refused.isEmpty)
        for (_, error) in refused {
            #expect(error.code == .tryAgainLater && error.retryAfter != nil, "\(error.code): \(error.reason)")
        }
        let stored = try await clients[1].values().values
        #expect(writers.lost(in: stored).isEmpty, "acknowledged writes lost: \(writers.lost(in: stored))")
    }

    /// The primary's machine is lost while clients write, and its synchronous standby is promoted: nodes given
    /// both servers (`target_session_attrs=read-write`) write to the promoted one without a restart, and
    /// every write acknowledged before the loss or after is there.
    @Test func aPromotedStandbyTakesOverWithoutARestartAndKeepsEveryAcknowledgedWrite() async throws {
        let primary = try await TemporaryPostgres.dedicated()
        var location = try PostgresLocation(url: try await primary.database())
        let standby = try await primary.standby(synchronous: true)
        location.servers.append(.init(host: "127.0.0.1", port: standby.port))
        location.sessionAttributes = .readWrite
        var standbyOnly = location
        standbyOnly.servers.removeFirst()
        await #expect(throws: StoreError.unavailable, "a standby takes no writes") {
            try await PostgresStore.open(standbyOnly, connections: 2)
        }
        let (clients, writers) = try await Self.writingThroughTwoNodes(on: location)

        try await primary.stop()
        let countsAtLoss = writers.acknowledgedCounts
        try await standby.promote()
        #expect(
            await eventually(timeout: .seconds(60)) {
                let counts = writers.acknowledgedCounts
                return (0..<2).allSatisfy { counts[$0] > countsAtLoss[$0] + 10 }
            }, "both nodes write to the promoted standby: \(writers.acknowledgedCounts) from \(countsAtLoss)")
        await writers.stop()

        for (_, error) in writers.refused {
            #expect(error.code == .tryAgainLater && error.retryAfter != nil, "\(error.code): \(error.reason)")
        }
        let stored = try await clients[1].values().values
        #expect(writers.lost(in: stored).isEmpty, "acknowledged writes lost: \(writers.lost(in: stored))")
    }

    /// A node killed (SIGKILL) while clients write through it and through another: its clients find it gone
    /// (`NETWORK_UNAVAILABLE`) and go on through the other node, which holds every write either acknowledged.
    @Test func aNodeKilledMidWriteLosesNoAcknowledgedWrite() async throws {
        let database = try await TemporaryPostgres.shared().database()
        let location = try PostgresLocation(url: database)
        let data = TestServer.temporaryDirectory()
        let survivor = try await TestServer.start(dataDirectory: data) {
            $0.storage = .postgres(location, connections: 4)
            // Real time: a session's rate limit refills with it (the tests' manual clock stands still).
            $0.now = { Date() }
        }
        let app = try await survivor.seedApp()
        let serve = ChildProcess(
            executable: try CommandLineTests.executable,
            arguments: ["serve", "--port", "0", "--data", data.path, "--database", database, "--database-connections", "4"],
            environment: CommandLineTests.environment(server: nil))
        var writers: Writers?
        let ending = try await serve.whileRunning { printed in
            #expect(
                await eventually(timeout: .seconds(60)) { printed.value.contains("Nimbus is serving http://127.0.0.1:") },
                "\(printed.errors)")
            let serving = try #require(printed.value.range(of: "Nimbus is serving http://127.0.0.1:"))
            let port = printed.value[serving.upperBound...].prefix { $0.isNumber }
            var doomed = try await survivor.signIn(email: "ann@example.com", device: "phone")
            doomed.server = URL(string: "http://127.0.0.1:\(port)")!
            let clients = [
                app.keyValueClient(doomed),
                app.keyValueClient(try await survivor.signIn(email: "ann@example.com", device: "laptop")),
            ]
            let running = Writers(clients)
            writers = running
            #expect(
                await eventually(timeout: .seconds(30)) {
                    let counts = running.acknowledgedCounts
                    return counts[0] >= 20 && counts[1] >= 1
                }, "both nodes acknowledge writes: \(running.acknowledgedCounts), \(running.refused.prefix(3))")
            kill(printed.processID, SIGKILL)
        }
        #expect(ending == .signaled(SIGKILL))
        let running = try #require(writers)
        let afterKill = running.acknowledgedCount
        #expect(
            await eventually(timeout: .seconds(30)) { running.acknowledgedCount > afterKill + 10 }, "the survivor goes on")
        await running.stop()
        for (client, error) in running.refused {
            #expect(
                client == 0 && error.code == .networkUnavailable,
                "a dead node is unreachable, nothing else: \(error.code) \(error.reason)")
        }
        let stored = try await app.keyValueClient(try await survivor.signIn(email: "ann@example.com", device: "check")).values()
            .values
        #expect(running.lost(in: stored).isEmpty, "acknowledged writes lost: \(running.lost(in: stored))")
    }
}
