import Crypto
import Foundation
import NIOCore
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusStore
import NimbusTesting
import NimbusTestingCore
import Synchronization
import Testing

/// Three nodes whose blobs are in one bucket when the object store is lost under load: transfers are
/// answered `TRY_AGAIN_LATER` (nothing else) while what needs no blob goes on, and once the store is back
/// transfers resume, with every chunk acknowledged before the loss whole.
@Suite(.cleansUp) struct ObjectStoreFaultTests {
    /// What the load saw, by kind of request.
    final class Tally: Sendable {
        struct Refusal {
            var kind: String
            var error: NimbusError
            /// When the request began and failed.
            var begun: ContinuousClock.Instant
            var failed: ContinuousClock.Instant
        }

        let done = Mutex<[String: Int]>([:])
        let refused = Mutex<[Refusal]>([])
        let stopped = Atomic(false)
        /// When the object store was lost, when its restart began, and when it was ready again.
        let lostAt = Mutex<ContinuousClock.Instant?>(nil)
        let restartingAt = Mutex<ContinuousClock.Instant?>(nil)
        let backAt = Mutex<ContinuousClock.Instant?>(nil)

        func count(_ kind: String) -> Int { done.withLock { $0[kind] ?? 0 } }

        /// Runs `request` over and over until stopped, counting what succeeds and keeping what is refused.
        func repeatedly(_ kind: String, _ request: @escaping @Sendable (Int) async throws -> Void) -> Task<Void, Never> {
            Task {
                var number = 0
                while !stopped.load(ordering: .relaxed) {
                    number += 1
                    let begun = ContinuousClock.now
                    do {
                        try await request(number)
                        done.withLock { $0[kind, default: 0] += 1 }
                        try? await Task.sleep(for: .milliseconds(5))
                    } catch {
                        let error = error as? NimbusError ?? NimbusError(.internalError, "\(error)")
                        refused.withLock { $0.append(Refusal(kind: kind, error: error, begun: begun, failed: .now)) }
                        // As a client does when told to try again: not at once.
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
        }
    }

    @Test func transfersWaitForALostObjectStoreWhileEverythingElseGoesOn() async throws {
        let objects = try await TemporarySeaweedFS.start()
        let bucket = objects.bucket()
        try await S3Client(bucket).createBucket()
        let deployment = try await TestDeployment.start(.threeNodes) {
            $0.blobs = .s3(bucket)
            // Real time: a session's rate limit refills with it (the tests' manual clock stands still).
            $0.now = { Date() }
        }
        let app = try await deployment.seedApp()
        let phone = try await deployment.signIn(email: "ann@example.com", device: "phone")
        let laptop = try await deployment.signIn(email: "ann@example.com", device: "laptop")
        let uploader = DocumentClient(client: NimbusClient(session: phone, apiToken: app.apiToken), container: app.container)
        let downloader = DocumentClient(client: NimbusClient(session: laptop, apiToken: app.apiToken), container: app.container)
        let keys = app.keyValueClient(laptop)

        var generator = SeededGenerator(seed: 31)
        let kept = generator.bytes(300_000)
        let keptHash = Self.hash(kept)
        try await uploader.upload(chunk: ByteBuffer(bytes: kept), hash: keptHash)

        let tally = Tally()
        let load = [
            tally.repeatedly("upload") { number in
                let bytes = Data("chunk \(number) of the phone, \(UUID())".utf8) + kept.prefix(64 << 10)
                try await uploader.upload(chunk: ByteBuffer(bytes: bytes), hash: Self.hash(bytes))
            },
            tally.repeatedly("download") { _ in
                guard try await downloader.download(chunk: keptHash) == ByteBuffer(bytes: kept) else { throw Mismatch() }
            },
            tally.repeatedly("key-value write") { number in
                _ = try await keys.modify([.set("counter", .int64(Int64(number)))])
            },
            tally.repeatedly("document changes") { _ in _ = try await downloader.changes(since: nil) },
        ]
        let kinds = ["upload", "download", "key-value write", "document changes"]
        #expect(
            await eventually(timeout: .seconds(30)) { kinds.allSatisfy { tally.count($0) >= 5 } },
            "every kind of request goes through: \(tally.done.withLock { $0 })")

        objects.kill()
        // The store is gone once `kill` returns (killed and reaped); a download begun before then may have been
        // streaming when it went. Marked before the kill, the loss was early by however long the kill took (tens
        // of milliseconds under load), and downloads begun in between were cut midway against the test's books.
        tally.lostAt.withLock { $0 = .now }
        #expect(
            await eventually(timeout: .seconds(30)) {
                let refused = tally.refused.withLock { $0.map(\.kind) }
                return refused.contains("upload") && refused.contains("download")
            }, "transfers are refused while the store is lost")
        let whileLost = Dictionary(uniqueKeysWithValues: kinds.map { ($0, tally.count($0)) })
        #expect(
            await eventually(timeout: .seconds(30)) {
                tally.count("key-value write") > whileLost["key-value write"]! + 10
                    && tally.count("document changes") > whileLost["document changes"]! + 10
            }, "what needs no blob goes on while the store is lost")

        tally.restartingAt.withLock { $0 = .now }
        try await objects.restart()
        tally.backAt.withLock { $0 = .now }
        #expect(
            await eventually(timeout: .seconds(60)) {
                tally.count("upload") > whileLost["upload"]! + 5 && tally.count("download") > whileLost["download"]! + 5
            }, "transfers resume once the store is back: \(tally.done.withLock { $0 })")
        tally.stopped.store(true, ordering: .relaxed)
        for task in load { await task.value }

        let (lost, restarting, back) = (
            try #require(tally.lostAt.withLock { $0 }), try #require(tally.restartingAt.withLock { $0 }),
            try #require(tally.backAt.withLock { $0 })
        )
        /// An instant as milliseconds from the loss, for the messages below.
        func sinceTheLoss(_ instant: ContinuousClock.Instant) -> String {
            String(format: "%+.0f ms", (instant - lost) / .milliseconds(1))
        }
        for refusal in tally.refused.withLock({ $0 }) {
            let (kind, error) = (refusal.kind, refusal.error)
            // A download already streaming when the store went can only be cut short: its client sees the
            // connection end early, as with any interrupted transfer, and asks again.
            let cutMidway = kind == "download" && refusal.begun < lost && error.code == .networkUnavailable
            #expect(
                ["upload", "download"].contains(kind) && (cutMidway || error.code == .tryAgainLater && error.retryAfter != nil),
                """
                \(kind): \(error.code) \(error.reason); begun \(sinceTheLoss(refusal.begun)) and failed \
                \(sinceTheLoss(refusal.failed)) from the loss (the restart began \(sinceTheLoss(restarting)), ready \
                \(sinceTheLoss(back)))
                """)
        }
        #expect(try await downloader.download(chunk: keptHash) == ByteBuffer(bytes: kept))
    }

    struct Mismatch: Error {}

    static func hash(_ bytes: Data) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }
}
