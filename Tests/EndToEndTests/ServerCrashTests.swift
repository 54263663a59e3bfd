import Crypto
import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// `kill -9` of `nimbus serve` while document commits are in flight: restarted on the same data, every
/// acknowledged batch is there whole, every other batch is there whole or not at all, and sending an
/// unacknowledged batch again stores nothing twice.
@Suite(.cleansUp) struct ServerCrashTests {
    static let filesPerBatch = 300

    /// A child `nimbus serve` on `data`, until `body` returns (or the server is killed).
    func serving(_ data: URL, _ body: (URL, Int32) async throws -> Void) async throws {
        let serve = try ChildProcess(
            executable: CommandLineTests.executable, arguments: ["serve", "--data", data.path, "--port", "0"],
            environment: CommandLineTests.environment(server: nil))
        _ = try await serve.whileRunning { output in
            #expect(await eventually(timeout: .seconds(30)) { output.value.contains("Nimbus is serving http://127.0.0.1:") })
            let port = try #require(output.value.split(separator: "127.0.0.1:").last?.prefix { $0.isNumber })
            try await body(try #require(URL(string: "http://127.0.0.1:\(port)")), output.processID)
        }
    }

    static func batch(_ number: Int) -> (chunks: [ChunkBundle.Chunk], operations: [DocumentOperation]) {
        let chunks = (0..<filesPerBatch).map { index in
            let bytes = Data("batch \(number), file \(index)".utf8)
            return ChunkBundle.Chunk(hash: Secrets.hex(SHA256.hash(data: bytes)), bytes: bytes)
        }
        let folder = "folder-\(number)"
        let operations =
            [DocumentOperation(.save, itemID: folder, name: "Batch \(number)", kind: .folder)]
            + chunks.enumerated().map { index, chunk in
                DocumentOperation(
                    .save, itemID: "\(folder)-\(index)", parentID: folder, name: "\(index).txt", kind: .file,
                    content: DocumentContent(
                        contentHash: chunk.hash, size: Int64(chunk.bytes.count),
                        chunks: [DocumentChunk(hash: chunk.hash, size: Int64(chunk.bytes.count))], modifiedAt: 1_000))
            }
        return (chunks, operations)
    }

    /// Every live item, through every page of changes.
    static func items(_ client: DocumentClient) async throws -> [DocumentItem] {
        var (items, token): ([DocumentItem], String?) = ([], nil)
        while true {
            let page = try await client.changes(since: token)
            items += page.items
            token = page.syncToken
            if !page.moreComing { return items }
        }
    }

    /// Sends the batches at once to a server on `data` and kills it as soon as one is acknowledged: the batches
    /// acknowledged before it died.
    func killedMidCommit(
        _ data: URL, _ app: TestServer.SeededApp, _ session: NimbusSession, batches numbers: [Int]
    ) async throws -> Set<Int> {
        var acknowledged = Set<Int>()
        try await serving(data) { url, processID in
            let client = DocumentClient(
                client: NimbusClient(server: url, apiToken: app.apiToken, sessionToken: session.sessionToken),
                container: app.container)
            for number in numbers { try await client.upload(bundle: Self.batch(number).chunks) }
            acknowledged = await withTaskGroup(of: Int?.self) { group in
                for number in numbers {
                    group.addTask {
                        let response = try? await client.modify(Self.batch(number).operations)
                        return response?.results.allSatisfy({ $0.outcome == .applied }) == true ? number : nil
                    }
                }
                var done = Set<Int>()
                for await number in group {
                    if let number {
                        if done.isEmpty { kill(processID, SIGKILL) }
                        done.insert(number)
                    }
                }
                return done
            }
        }
        return acknowledged
    }

    @Test func aServerKilledMidCommitKeepsEachBatchWholeOrNotAtAll() async throws {
        let setup = try await TestServer.start()
        let app = try await setup.seedApp()
        let session = try await setup.signIn(email: "ann@example.com", device: "phone")
        await setup.stop()
        let batchesPerRound = 6
        var sent: [Int] = []
        var acknowledged = Set<Int>()
        // A round sends its batches at once and kills the server as soon as one is acknowledged. When all of
        // them share one group commit (a loaded machine can queue them all before it starts), every answer is on
        // its way before the kill lands and nothing was cut mid-commit: then another round, on the same data.
        var cutMidCommit = false
        for round in 0..<5 where !cutMidCommit {
            let numbers = Array(round * batchesPerRound..<(round + 1) * batchesPerRound)
            sent += numbers
            let acknowledgedNow = try await killedMidCommit(setup.dataDirectory, app, session, batches: numbers)
            acknowledged.formUnion(acknowledgedNow)
            cutMidCommit = !acknowledgedNow.isEmpty && acknowledgedNow.count < numbers.count
        }
        #expect(cutMidCommit, "a kill came mid-commit in one of the rounds: \(acknowledged.sorted()) of \(sent)")
        let batches = sent.count

        try await serving(setup.dataDirectory) { url, _ in
            let client = DocumentClient(
                client: NimbusClient(server: url, apiToken: app.apiToken, sessionToken: session.sessionToken),
                container: app.container)
            let items = try await Self.items(client)
            for number in 0..<batches {
                let stored = items.filter { $0.itemID == "folder-\(number)" || $0.parentID == "folder-\(number)" }
                #expect(stored.count == 0 || stored.count == Self.filesPerBatch + 1, "batch \(number) is whole or absent")
                if acknowledged.contains(number) {
                    #expect(stored.count == Self.filesPerBatch + 1, "batch \(number) was acknowledged")
                }
            }
            // Every stored file's bytes are there; a batch sent again adds no version.
            let sample = try #require(items.first { $0.kind == .file }?.current?.content.chunks.first)
            let bytes = try await client.download(chunk: sample.hash)
            #expect(bytes.withUnsafeReadableBytes { Secrets.hex(SHA256.hash(data: $0)) } == sample.hash)
            for number in 0..<batches {
                let results = try await client.modify(Self.batch(number).operations).results
                #expect(results.allSatisfy { $0.outcome == .applied }, "batch \(number) again")
            }
            let again = try await Self.items(client)
            #expect(again.count == batches * (Self.filesPerBatch + 1))
            let file = try #require(again.first { $0.itemID == "folder-0-0" })
            #expect(try await client.versions(of: file.itemID).history.isEmpty, "the same content twice is one version")
        }
    }
}
