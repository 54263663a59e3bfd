import BenchmarkSupport
import Foundation
import Logging
import NimbusCore
import NimbusDevice
import NimbusKit

/// The app-facing figures: how soon another device's save shows in a `MetadataQuery`, and what a query
/// over 100,000 items costs.
enum MetadataQueryBenchmarks {
    /// Milliseconds from a coordinated save on A until B's query reports the item (first update: B's daemon
    /// knows of it), and until it reports it downloaded (current).
    static func saveToQueryUpdate(_ pair: DevicePair, saves: Int) async throws -> (known: [Double], current: [Double]) {
        try await pair.withHosts { a, b in
            let query = MetadataQuery(device: b)
            query.predicate = try MetadataPredicate("%K LIKE 'q*.note'", [.string(MetadataItem.Key.fsName)])
            var events = query.events.makeAsyncIterator()
            try await query.start()
            _ = await events.next()  // gathering finished
            guard let container = await a.ubiquityContainerURL(forIdentifier: nil) else {
                throw BenchmarkError("A's daemon serves no container")
            }
            let documents = container.appendingPathComponent("Documents")
            try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
            var (known, current): ([Double], [Double]) = ([], [])
            for index in 0..<(saves + 5) {
                let name = "q\(index).note"
                let bytes = Data("note \(index)".utf8)
                let start = ContinuousClock.now
                try await FileCoordinator(device: a).coordinate(writingItemAt: documents.appendingPathComponent(name)) {
                    try bytes.write(to: $0)
                }
                var firstSeen: Duration?
                while let event = await events.next() {
                    guard case .updated(let added, let changed, _) = event,
                        let item = (added + changed).first(where: { $0.name == name })
                    else { continue }
                    if firstSeen == nil { firstSeen = ContinuousClock.now - start }
                    if item.downloadingStatus == .current { break }
                }
                if index >= 5, let firstSeen {
                    known.append(firstSeen.milliseconds)
                    current.append((ContinuousClock.now - start).milliseconds)
                }
            }
            query.stop()
            return (known, current)
        }
    }

    struct LargeQuery {
        /// The first query of each of several daemons started in turn on the same journal.
        var coldGathering: [Double]
        var warmGathering: [Double]
        var selectiveGathering: [Double]
        var updates: [Double]
        var roundTrip: [Double]
    }

    /// A daemon's control socket over a journal holding `items` synced files (100 folders of them), and a
    /// query of them all: gathering (the first after a daemon starts loads its index; five daemons are started
    /// in turn, since one such figure swings by a fifth run to run), a selective query, and the update an app
    /// hears after the daemon records one changed item (as a round does when the server's change arrives).
    static func largeQuery(items: Int, in directory: URL, session: NimbusSession, apiToken: String, container: String)
        async throws -> LargeQuery
    {
        let root = directory.appendingPathComponent("nimbus-bench-query-\(UUIDString.random())")
        let folder = root.appendingPathComponent("Mobile Documents/container")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let journalPath = root.appendingPathComponent("journal.sqlite").path
        var journal = try DeviceJournal(path: journalPath)
        let folders = 100
        var remote = (0..<folders).map {
            DocumentItem(itemID: "folder-\($0)", parentID: "documents", name: "Folder \($0)", kind: .folder)
        }
        remote.append(DocumentItem(itemID: "documents", parentID: nil, name: "Documents", kind: .folder))
        var local: [ItemID: LocalFile] = [:]
        func file(_ index: Int, content: String) -> DocumentItem {
            let version = DocumentVersion(
                versionID: "v-\(index)-\(content.prefix(8))",
                content: DocumentContent(contentHash: content, size: 1024, chunks: [], modifiedAt: 1_700_000_000_000),
                device: "a",
                baseContentHash: nil, savedAt: 1_700_000_000_000)
            return DocumentItem(
                itemID: "item-\(index)", parentID: "folder-\(index % folders)", name: "f\(index).txt", kind: .file,
                current: version, createdAt: 1_700_000_000_000)
        }
        for index in 0..<items {
            let item = file(index, content: String(repeating: "a", count: 64))
            remote.append(item)
            let id = ItemID("item-\(index)")
            local[id] = LocalFile(
                id: id, path: "Documents/Folder \(index % folders)/f\(index).txt", inode: UInt64(index + 10), size: 1024,
                modified: 1_700_000_000_000_000_000, content: item.current?.content.contentHash)
        }
        try await journal.applyRemote(DocumentChangesResponse(items: remote, removed: [], syncToken: "t0", moreComing: false))
        try await journal.updateLocalFiles(from: [], to: ItemTable(local))

        let client = DocumentClient(client: NimbusClient(session: session, apiToken: apiToken), container: container)
        /// A daemon as `nimbus device run` starts one: its journal opened, its engine, its control socket.
        func startDaemon() throws -> ControlSocket {
            journal = try DeviceJournal(path: journalPath)
            let engine = SyncEngine(client: client, folder: folder, journal: journal, device: "bench")
            let control = DeviceControl(engine: engine, container: container)
            return try ControlSocket(path: ControlSocket.path(root: root), handler: DeviceHost.handler([control]))
        }
        let device = UbiquityDevice(root: root)

        func gather(_ predicate: MetadataPredicate) async throws -> (Double, MetadataQuery) {
            let query = MetadataQuery(device: device)
            query.predicate = predicate
            let start = ContinuousClock.now
            try await query.start()
            return ((ContinuousClock.now - start).milliseconds, query)
        }
        let all = try MetadataPredicate("%K LIKE '*.txt'", [.string(MetadataItem.Key.fsName)])
        var cold: [Double] = []
        var socket = try startDaemon()
        for restart in 0..<5 {
            if restart > 0 {
                socket.stop()
                socket = try startDaemon()
            }
            let (milliseconds, first) = try await gather(all)
            guard first.results.count == items else { throw BenchmarkError("gathered \(first.results.count) of \(items)") }
            cold.append(milliseconds)
            first.stop()
        }
        defer { socket.stop() }
        var warm: [Double] = []
        for _ in 0..<5 {
            let (milliseconds, query) = try await gather(all)
            warm.append(milliseconds)
            query.stop()
        }
        var selective: [Double] = []
        for round in 0..<5 {
            let (milliseconds, query) = try await gather(
                try MetadataPredicate("%K == %@", [.string(MetadataItem.Key.fsName), .string("f\(round * 997).txt")]))
            guard query.results.count == 1 else { throw BenchmarkError("the selective query found \(query.results.count)") }
            selective.append(milliseconds)
            query.stop()
        }

        let (_, watching) = try await gather(all)
        var events = watching.events.makeAsyncIterator()
        _ = await events.next()  // gathering finished
        var updates: [Double] = []
        for round in 0..<55 {
            let index = (round * 7919) % items
            let changed = file(index, content: String(repeating: "b", count: 60) + String(format: "%04d", round))
            let start = ContinuousClock.now
            try await journal.applyRemote(
                DocumentChangesResponse(items: [changed], removed: [], syncToken: "t\(round + 1)", moreComing: false))
            while let event = await events.next() {
                if case .updated(_, let items, _) = event, items.contains(where: { $0.name == "f\(index).txt" }) { break }
            }
            if round >= 5 { updates.append((ContinuousClock.now - start).milliseconds) }
        }
        watching.stop()

        var roundTrip: [Double] = []
        for _ in 0..<50 {
            let start = ContinuousClock.now
            _ = try await DaemonConnection.request(ControlRequest(command: .status), root: root)
            roundTrip.append((ContinuousClock.now - start).milliseconds)
        }
        try? FileManager.default.removeItem(at: root)
        return LargeQuery(
            coldGathering: cold, warmGathering: warm, selectiveGathering: selective, updates: updates, roundTrip: roundTrip)
    }
}

extension DevicePair {
    /// Runs `body` while both devices' daemons run as `nimbus device run` runs them (a host with its control
    /// socket on each device's root), with the `UbiquityDevice` an app opens on each.
    func withHosts<T: Sendable>(_ body: @Sendable (UbiquityDevice, UbiquityDevice) async throws -> T) async throws -> T {
        let devices = [a, b]
        let roots = devices.map { $0.folder.deletingLastPathComponent().deletingLastPathComponent() }
        let tasks = zip(devices, roots).map { device, root in
            let daemon = DeviceDaemon(
                engine: device.engine, folder: device.folder, session: device.session, container: container,
                rescanInterval: .seconds(600), logger: Logger(label: "bench"))
            return Task { try await DeviceHost(root: root, daemons: [daemon]).run() }
        }
        defer { for task in tasks { task.cancel() } }
        let apps = roots.map { UbiquityDevice(root: $0) }
        for app in apps {
            let deadline = ContinuousClock.now + .seconds(30)
            while await app.ubiquityContainerURL(forIdentifier: nil) == nil {
                guard ContinuousClock.now < deadline else { throw BenchmarkError("a daemon did not start") }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        return try await body(apps[0], apps[1])
    }
}
