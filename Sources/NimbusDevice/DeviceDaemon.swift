import CProcessTuning
import Foundation
import Logging
import NimbusCore
import NimbusKit

/// What `nimbus device run` runs: a sync engine woken by the folder changing (inotify), by the server
/// announcing a change of the container's documents (the push socket), and by a periodic rescan as a
/// safety net. Offline, it keeps the disk's changes in the journal and tries again with backoff.
package final class DeviceDaemon: Sendable {
    private let engine: SyncEngine
    private let folder: URL
    private let session: NimbusSession
    private let container: String
    private let rescanInterval: Duration
    private let logger: Logger
    private let wakes = DaemonWakes()
    /// Answers the control socket for this daemon's folder (`DeviceHost` serves the socket).
    package let control: DeviceControl

    package init(
        engine: SyncEngine, folder: URL, session: NimbusSession, container: String, rescanInterval: Duration = .seconds(30),
        logger: Logger
    ) {
        let wakes = wakes
        control = DeviceControl(engine: engine, container: container) { wakes.wake() }
        self.engine = engine
        self.folder = folder
        self.session = session
        self.container = container
        self.rescanInterval = rescanInterval
        self.logger = logger
    }

    /// Makes the process lean for a long-running daemon: threads share two heaps (glibc made up to eight a
    /// core, each keeping what it freed), and blocks of 128 KiB and more are always mapped on their own, so a
    /// round's tables of every item go back to the system when freed. By default glibc raises that threshold to
    /// the largest block freed so far (up to 32 MiB): the next round's tables then came from the heaps, where the
    /// freed ones lay in pieces until the round ended, and a daemon's peak at 100,000 files was 14–21% higher
    /// (`BENCHMARKS.md`). Call once, early, in a process that is mostly a daemon.
    package static func tuneMemory() {
        nimbus_set_malloc_arena_max(2)
        nimbus_set_malloc_thresholds(128 << 10, 128 << 10)
    }

    /// A round over a large folder builds its trees afresh; between rounds the daemon idles (or, offline,
    /// waits to try again), so what they took goes back to the system instead of sitting in the heaps.
    private static func releaseRoundMemory() { nimbus_release_free_memory() }

    /// Syncs until cancelled, on the device's threads.
    package func run() async throws {
        try await DeviceExecutor.run { try await runHere() }
    }

    private func runHere() async throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let wakes = wakes
        let watcher = try FolderWatcher(ignoring: engine.ownChanges) { wakes.wake() }
        let (container, environment, engine) = (container, engine.client.environment, engine)
        let (announcements, announce) = AsyncStream.makeStream(
            of: ChunksAnnouncement.self, bufferingPolicy: .bufferingNewest(256))
        let push = PushConnection(
            session: session, logger: logger, onConnect: { wakes.wake() },
            onMessage: { message in
                guard message.zone?.service.kind == .documents && message.zone?.service.container == container else { return }
                if let announcement = message.announcement {
                    if message.zone?.service.environment == environment { announce.yield(announcement) }
                } else {
                    wakes.pushed(message.sequence)
                }
            })
        push.start()
        // In the order they arrive: each extends what the ones before announced.
        let downloadingAhead = Task {
            await DeviceExecutor.run { for await announcement in announcements { await engine.announced(announcement) } }
        }
        let timer = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: rescanInterval)
                wakes.wake()
            }
        }
        defer {
            downloadingAhead.cancel()
            announce.finish()
            timer.cancel()
            push.stop()
            watcher.stop()
        }
        var backoff = Duration.milliseconds(250)
        wakes.wake()
        for await _ in wakes.stream {
            if Task.isCancelled { break }
            guard wakes.askForRound(fetched: await engine.fetchedSequence) else { continue }
            do {
                // A folder is watched before the next round's scan, which sees what changed in it before its
                // watch: the folders a round made are watched before the round after it. One first watched
                // after the last round (an app's, made meanwhile) gets another round. What woke the daemon
                // before a round began, that round sees.
                let settled = try await engine.sync {
                    watcher.watch(folder)
                    wakes.roundBegins()
                }
                Self.releaseRoundMemory()
                if watcher.watch(folder) { wakes.wake() }
                if settled {
                    backoff = .milliseconds(250)
                } else {
                    // Steps that keep failing (a folder that cannot be removed, say) are retried, not spun on.
                    try? await Task.sleep(for: backoff)
                    backoff = min(backoff * 2, .seconds(30))
                    wakes.wake()
                }
            } catch {
                Self.releaseRoundMemory()
                logger.warning("sync round failed; trying again", metadata: ["error": "\(error)", "retryIn": "\(backoff)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(30))
                wakes.wake()
            }
        }
    }
}
