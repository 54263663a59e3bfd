import Foundation
import NimbusCore
import NimbusDevice
import NimbusKit

// Two sync rounds at once in a process of their own, as a host syncing two containers runs them: one online
// over `count` new files (scan, hashing, uploads, commits), one offline over `count` more (scan, hashing,
// planning). Meanwhile a task is scheduled on Swift's cooperative pool every few milliseconds; the probe prints
// how long the longest waited to start, as JSON. Its own process, so that what it measures is the rounds' use
// of the pool and not that of the tests and servers beside them (`EndToEndTests.DeviceResponsivenessTests`).
//
// device-responsiveness-probe SERVER EMAIL PASSWORD API_TOKEN CONTAINER DIRECTORY COUNT

struct Result: Encodable {
    var worstMilliseconds: Double
    /// The worst a plain thread of this process woke late from a 5 ms sleep meanwhile: how long the machine
    /// itself left the process's threads waiting, which no use of the pool can beat.
    var worstPlainThreadMilliseconds: Double
    var probes: Int
    var synced: Int
    var scanned: Int
}

let arguments = CommandLine.arguments
guard arguments.count == 8, let server = URL(string: arguments[1]), let count = Int(arguments[7]) else {
    FileHandle.standardError.write(
        Data("usage: device-responsiveness-probe SERVER EMAIL PASSWORD API_TOKEN CONTAINER DIRECTORY COUNT\n".utf8))
    exit(2)
}
let (email, password, apiToken, container) = (arguments[2], arguments[3], arguments[4], arguments[5])
let directory = URL(fileURLWithPath: arguments[6])

/// A device of the user with a folder and journal of its own under `directory`.
func device(_ name: String, session: NimbusSession) throws -> (engine: SyncEngine, journal: DeviceJournal, folder: URL) {
    let root = directory.appendingPathComponent(name)
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    let folder = root.appendingPathComponent("Mobile Documents/iCloud~com~example~Cloudy")
    let journal = try DeviceJournal(path: root.appendingPathComponent("journal.sqlite").path)
    let client = DocumentClient(client: NimbusClient(session: session, apiToken: apiToken), container: container)
    return (SyncEngine(client: client, folder: folder, journal: journal, device: name), journal, folder)
}

let online = try device(
    "online", session: try await NimbusAccount.signIn(server: server, email: email, password: password, deviceName: "online"))
var offlineSession = try await NimbusAccount.signIn(server: server, email: email, password: password, deviceName: "offline")
offlineSession.server = URL(string: "http://127.0.0.1:1")!  // nothing listens there
let offline = try device("offline", session: offlineSession)
try await DeviceExecutor.run {
    for folder in [online.folder, offline.folder] {
        let documents = folder.appendingPathComponent("Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        for index in 0..<count { try Data("file \(index)\n".utf8).write(to: documents.appendingPathComponent("\(index).txt")) }
    }
}
/// A thread of its own sleeping 5 ms at a time, keeping the worst it woke late, until `stop`.
final class PlainThreadLateness: @unchecked Sendable {
    private let lock = NSLock()
    private var worst = Duration.zero
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init() {
        Thread.detachNewThread { [self] in
            while !lock.withLock({ stopped }) {
                let start = ContinuousClock.now
                Thread.sleep(forTimeInterval: 0.005)
                let late = ContinuousClock.now - start - .milliseconds(5)
                lock.withLock { worst = max(worst, late) }
            }
            done.signal()
        }
    }

    /// Stops the thread; the worst lateness it saw.
    func stop() -> Duration {
        lock.withLock { stopped = true }
        done.wait()
        return lock.withLock { worst }
    }
}

let plainThread = PlainThreadLateness()
let delays = try await withThrowingTaskGroup(of: [Duration]?.self) { group in
    group.addTask {
        try await online.engine.syncOnce()
        return nil
    }
    group.addTask {
        // Offline, the round scans and plans, then reports the network's absence.
        do {
            try await offline.engine.syncOnce()
        } catch let error as NimbusError where error.code == .networkUnavailable {}
        return nil
    }
    group.addTask {
        var delays: [Duration] = []
        while !Task.isCancelled {
            let scheduled = ContinuousClock.now
            delays.append(await Task { ContinuousClock.now - scheduled }.value)
            try? await Task.sleep(for: .milliseconds(5))
        }
        return delays
    }
    // The rounds; the probes end only when cancelled.
    _ = try await group.next()
    _ = try await group.next()
    group.cancelAll()
    return try await group.next().flatMap { $0 } ?? []
}
let plainLateness = plainThread.stop()
let result = Result(
    worstMilliseconds: (delays.max() ?? .zero) / .milliseconds(1),
    worstPlainThreadMilliseconds: plainLateness / .milliseconds(1), probes: delays.count,
    synced: try await online.journal.syncedTree().items.count,
    scanned: try await offline.journal.localFiles().count)
print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
