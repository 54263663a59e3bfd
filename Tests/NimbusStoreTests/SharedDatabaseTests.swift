import Foundation
import NimbusCore
@testable import NimbusPostgres
import PostgresNIO
@testable import NimbusStore
import NimbusTestingCore
import Synchronization
import Testing

/// Several nodes on one PostgreSQL database: what must hold when writers and readers of one zone are on
/// different nodes.
@Suite(.cleansUp) struct SharedDatabaseTests {
    /// Three stores on one database, as three `nimbus serve` nodes have.
    func nodes(_ count: Int = 3) async throws -> [PostgresStore] {
        let location = try PostgresLocation(url: try await TemporaryPostgres.shared().database())
        var nodes = [PostgresStore]()
        for _ in 0..<count {
            let node = try await PostgresStore.open(location, connections: 6)
            TestResources.current?.onCleanup { node.close() }
            nodes.append(node)
        }
        return nodes
    }

    /// The trap of sequences allocated before commit: a change numbered n can become visible after n + 1,
    /// and a reader that already moved past n never sees it. Writers on three nodes race over shared
    /// zones while readers on every node follow the zones' changes; every reader must end up with every
    /// change, each seen once, in increasing order.
    @Test func readersOnAnyNodeNeverSkipAChangeWhileWritersOnThreeNodesRace() async throws {
        let nodes = try await nodes()
        let owner = Secrets.userRecordName()
        try await nodes[0].createAccount(
            AccountRecord(id: owner, email: "ann@example.com", passwordHash: "x", isAdministrator: false, createdAt: Date()))
        let zones = (0..<3).map {
            ZoneKey(accountID: owner, address: ZoneAddress(service: .keyValue, name: "zone\($0)"))
        }
        let (writersPerNode, commitsPerWriter) = (4, 25)
        let writing = Remaining(nodes.count * writersPerNode)
        /// Each reader's changes per zone, in the order it saw them.
        let seen = try await withThrowingTaskGroup(of: [ZoneKey: [Int64]]?.self) { group in
            for (number, node) in nodes.enumerated() {
                for writer in 0..<writersPerNode {
                    group.addTask {
                        defer { writing.count.withLock { $0 -= 1 } }
                        for commit in 0..<commitsPerWriter {
                            // Every key once, so a zone's change feed keeps every change.
                            let key = "n\(number)-w\(writer)-c\(commit)"
                            let zone = zones[(writer + commit) % zones.count]
                            _ = try await node.commit(
                                zone, mutations: [EntryMutation(key: key, payload: Data(key.utf8), size: key.utf8.count)]
                            ) { _ in }
                        }
                        return nil
                    }
                }
                group.addTask {
                    var cursors = [ZoneKey: Int64]()
                    var seen = [ZoneKey: [Int64]]()
                    // Follow until the writers are done, then once more: that pass sees everything committed.
                    var finished = false
                    while !finished {
                        finished = writing.count.withLock { $0 == 0 }
                        for zone in zones {
                            var moreComing = true
                            while moreComing {
                                let page = try await node.changes(zone, after: cursors[zone] ?? 0, limit: 7)
                                seen[zone, default: []] += page.entries.map(\.sequence)
                                if page.token.zoneID != 0 { cursors[zone] = page.token.sequence }
                                moreComing = page.moreComing
                            }
                        }
                        await Task.yield()
                    }
                    return seen
                }
            }
            var readers = [[ZoneKey: [Int64]]]()
            for try await result in group { if let result { readers.append(result) } }
            return readers
        }
        #expect(seen.count == nodes.count)
        var total = 0
        for zone in zones {
            let sequence = try #require(try await nodes[0].zoneState(zone)).sequence
            total += Int(sequence)
            for reader in seen {
                #expect(reader[zone] == Array(1...sequence), "a reader of \(zone.address.name) skipped or repeated a change")
            }
        }
        #expect(total == nodes.count * writersPerNode * commitsPerWriter)
    }

    /// A node of an older Nimbus refuses a database a newer one migrated, rather than write to it; one of
    /// the same version opens it again, migrating nothing.
    @Test func aDatabaseMigratedByANewerNimbusIsRefused() async throws {
        let location = try PostgresLocation(url: try await TemporaryPostgres.shared().database())
        let first = try await PostgresStore.open(location, connections: 2)
        defer { first.close() }
        let again = try await PostgresStore.open(location, connections: 2) { pending in
            Issue.record("a migrated database migrated again: \(pending)")
        }
        again.close()
        try await first.simulateNewerVersion(migration: "2099-01-01-from-the-future")
        await #expect(throws: StoreError.newerDatabase(unknownMigrations: ["2099-01-01-from-the-future"])) {
            _ = try await PostgresStore.open(location, connections: 2)
        }
    }

    /// A schema grown by a record transaction on one node and another on a second node, at the same time:
    /// neither growth is lost (each transaction writes only over the schema it read).
    @Test func schemaGrowthOnTwoNodesAtOnceKeepsBoth() async throws {
        let nodes = try await nodes(2)
        let owner = Secrets.userRecordName()
        try await nodes[0].createAccount(
            AccountRecord(id: owner, email: "ann@example.com", passwordHash: "x", isAdministrator: false, createdAt: Date()))
        let (container, environment) = ("iCloud.com.example.Cloudy", "development")
        try await nodes[0].createTeam(Team(teamID: "98Z3R5XU29", name: "Example"))
        try await nodes[0].createContainer(Container(identifier: container, teamID: "98Z3R5XU29"))
        let service = ZoneAddress.Service.records(container: container, environment: environment, database: "private")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (number, node) in nodes.enumerated() {
                group.addTask {
                    for round in 0..<20 {
                        let zone = ZoneKey(accountID: owner, address: ZoneAddress(service: service, name: "zone\(number)"))
                        _ = try await node.transactRecords(zone, creating: true) { transaction in
                            let text = try transaction.schemaText(container: container, environment: environment) ?? ""
                            try transaction.put("r\(round)", payload: Data("x".utf8), size: 1)
                            try transaction.setSchemaText(
                                text + "node\(number)-\(round);", container: container, environment: environment)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let grown = try #require(try await nodes[1].schemaText(container: container, environment: environment))
        let parts = grown.split(separator: ";").map(String.init)
        #expect(Set(parts) == Set(nodes.indices.flatMap { number in (0..<20).map { "node\(number)-\($0)" } }))
        #expect(parts.count == 40)
    }
}

extension SharedDatabaseTests {
    /// Three nodes claiming a periodic job's turns at the same moments, as each node's collector does: every
    /// turn goes to exactly one node.
    @Test func eachTurnOfAPeriodicJobGoesToOneNode() async throws {
        let nodes = try await nodes()
        let start = Date(milliseconds: 1_700_000_000_000)
        for turn in 0..<10 {
            let now = start.addingTimeInterval(Double(turn) * 60)
            let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
                for node in nodes { group.addTask { try await node.claimPeriodicRun("collect-blobs", every: 60, now: now) } }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(winners == 1, "turn \(turn)")
        }
    }
}

extension SharedDatabaseTests {
    /// What a call answers within `limit`, or nil when it has not answered by then (a hang).
    static func answer<T: Sendable>(within limit: Duration, _ call: @escaping @Sendable () async throws -> T) async -> Result<
        T, any Error
    >? {
        // Unstructured tasks, left behind when the limit passes: a call that never answers may not end when
        // cancelled either, and a task group would wait for it.
        let (answers, answer) = AsyncStream<Result<T, any Error>?>.makeStream()
        let calling = Task {
            do { answer.yield(.success(try await call())) } catch { answer.yield(.failure(error)) }
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            answer.yield(nil)
        }
        defer {
            calling.cancel()
            timer.cancel()
        }
        for await first in answers { return first }
        return nil
    }

    /// PostgreSQL stops while a transaction holds a connection: the statement the transaction sends next,
    /// on a connection that has closed, is answered `unavailable` (PostgresNIO alone never answers it).
    @Test func aStatementOnAConnectionClosedUnderItsTransactionIsAnsweredUnavailable() async throws {
        let cluster = try await TemporaryPostgres.dedicated()
        let store = try await PostgresStore.open(try PostgresLocation(url: try await cluster.database()), connections: 2)
        defer { store.close() }
        let (leased, lease) = AsyncStream<PostgresConnection>.makeStream()
        let (stopped, stop) = AsyncStream<Void>.makeStream()
        let transaction = Task {
            try await store.transaction { connection in
                lease.yield(connection)
                for await _ in stopped {}
                return try await connection.run("SELECT 1")
            }
        }
        let connection = try #require(await leased.first { _ in true })
        try await cluster.stop()
        try await connection.closeFuture.get()
        stop.finish()
        let answer = await Self.answer(within: .seconds(30)) { try await transaction.value }
        switch answer {
        case .none: Issue.record("the transaction did not answer within 30 s")
        case .some(.success): Issue.record("a statement on a closed connection succeeded")
        case .some(.failure(let error)): #expect(error as? StoreError == .unavailable, "\(error)")
        }
    }

    /// With its database stopped, a store answers `unavailable` (idle connections found dead, and new ones
    /// not made within the lease's timeout) rather than waiting for it; once the database is back, the same
    /// store works again.
    @Test func aStoreWhoseDatabaseIsDownSaysSoAndRecoversWhenItIsBack() async throws {
        let cluster = try await TemporaryPostgres.dedicated()
        let store = try await PostgresStore.open(try PostgresLocation(url: try await cluster.database()), connections: 4)
        defer { store.close() }
        let zone = ZoneKey(accountID: "_ann", address: ZoneAddress(service: .keyValue, name: "store"))
        @Sendable func write(_ key: String) async throws -> Int64 {
            try await store.commit(zone, mutations: [EntryMutation(key: key, payload: Data("x".utf8), size: 1)]) { _ in }.sequence
        }
        // Connections in the pool, idle, when the database goes away.
        _ = try await withThrowingTaskGroup(of: Int64.self) { group in
            for number in 0..<4 { group.addTask { try await write("before \(number)") } }
            return try await group.reduce(0, +)
        }
        try await cluster.stop()
        for attempt in 0..<6 {
            let answer = await Self.answer(within: PostgresStore.leaseTimeout * 3) { try await write("down \(attempt)") }
            switch answer {
            case .none: Issue.record("attempt \(attempt) did not answer within three lease timeouts")
            case .some(.success): Issue.record("attempt \(attempt) wrote to a stopped database")
            case .some(.failure(let error)): #expect(error as? StoreError == .unavailable, "attempt \(attempt): \(error)")
            }
        }
        try await cluster.start()
        #expect(await eventually(timeout: .seconds(30)) { (try? await write("after")) != nil }, "the store recovers")
        let keys = try await store.liveEntries(zone).entries.map(\.key)
        #expect(Set(keys) == ["before 0", "before 1", "before 2", "before 3", "after"])
    }
}

extension SharedDatabaseTests {
    /// A call that waits behind a busy pool for longer than the lease's timeout is served, not refused: the
    /// calls ahead of it finish meanwhile, so the queue moves (a stopped database, above, is refused at once).
    @Test func aCallQueuedBehindABusyPoolIsServedNotRefused() async throws {
        let store = try await PostgresStore.open(
            try PostgresLocation(url: try await TemporaryPostgres.shared().database()), connections: 2)
        defer { store.close() }
        // Eight statements of two seconds on two connections: the last two wait six seconds for theirs.
        let outcomes = await withTaskGroup(of: Result<Int, any Error>.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    do {
                        return .success(try await store.rows("SELECT pg_sleep(2)").count)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: [Result<Int, any Error>]()) { $0.append($1) }
        }
        let refused = outcomes.compactMap { outcome -> String? in
            if case .failure(let error) = outcome { "\(error)" } else { nil }
        }
        #expect(refused.isEmpty, "\(refused)")
        #expect(outcomes.count == 8)
    }
}

/// How many writers are still writing, shared by the tasks of a test.
private final class Remaining: Sendable {
    let count: Mutex<Int>

    init(_ count: Int) { self.count = Mutex(count) }
}

extension SharedDatabaseTests {
    /// Backups and sweeps on different nodes: a sweep is skipped while a backup on another node holds
    /// sweeps off, and a backup waits for a sweep under way on another node to end.
    @Test func aBackupOnOneNodeHoldsOffTheSweepsOfTheOthers() async throws {
        let nodes = try await self.nodes(2)
        let (backupNode, sweepNode) = (PostgresDecisionLock(store: nodes[0]), PostgresDecisionLock(store: nodes[1]))
        let skipped = try await backupNode.holdingOffSweeps {
            try await sweepNode.sweepingUnlessHeldOff { "swept" }
        }
        #expect(skipped == nil)
        #expect(try await sweepNode.sweepingUnlessHeldOff { "swept" } == "swept", "sweeps run again once the backup ends")

        let (sweepBegun, begin) = AsyncStream<Void>.makeStream()
        let (release, releasing) = AsyncStream<Void>.makeStream()
        let sweep = Task {
            try await sweepNode.sweepingUnlessHeldOff {
                begin.yield()
                for await _ in release { break }
                return "swept"
            }
        }
        for await _ in sweepBegun { break }
        let backupRan = Mutex(false)
        let backup = Task {
            try await backupNode.holdingOffSweeps { backupRan.withLock { $0 = true } }
        }
        // The backup waits for the sweep: its lock is asked for and not granted while the sweep runs.
        let waiting = await eventually(timeout: .seconds(30)) {
            let rows = try? await nodes[0].rows(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
            return ((try? rows?.first?.decode(Int64.self)) ?? 0) > 0
        }
        #expect(waiting && !backupRan.withLock { $0 }, "no backup copies while a sweep deletes")
        releasing.yield()
        #expect(try await sweep.value == "swept")
        try await backup.value
        #expect(backupRan.withLock { $0 })
    }
}
