import Foundation
import NIOCore
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Synchronization
import Testing

/// A large file's upload reads ahead of its uploads and reads each chunk again to send it.
@Suite struct LargeUploadTests {
    /// Bytes changed after they were hashed, before their chunk was read again to be sent, do not reach the
    /// server under the old chunk's name: the server refuses them (`CHUNK_MISMATCH`) and the upload ends as
    /// changed while sent, for the next round to read the file again. The file as it is then is stored whole, and
    /// confirmed by a second reading when it is not the content expected (a file read while it grew).
    @Test func bytesChangedAfterTheyWereHashedAreNotSentUnderTheOldHash() async throws {
        let fixture = try await DeviceSyncTests.Fixture.make()
        let file = try movie(seed: 31)
        var hashed: [DocumentChunk] = []
        _ = try await FileContent.chunks(of: file) { bytes, hash in
            hashed.append(DocumentChunk(hash: hash, size: Int64(bytes.count)))
        }

        let edit = FirstChunkEdit(file)
        let changed = try await upload(file, fixture.client, stillPlanned: edit.stillPlanned)
        #expect(edit.happened)
        #expect(changed == nil, "the upload ends as changed while sent")
        #expect(
            try await fixture.client.missing([hashed[0].hash]) == [hashed[0].hash], "no chunk under a name it does not hash to")

        var now: [DocumentChunk] = []
        let whole = try await FileContent.chunks(of: file) { bytes, hash in
            now.append(DocumentChunk(hash: hash, size: Int64(bytes.count)))
        }
        let sent = try #require(try await upload(file, fixture.client) { true })
        #expect(sent.hash == whole && sent.chunks == now)
        #expect(try await fixture.client.missing(now.map(\.hash)).isEmpty, "every chunk of the file is stored")
        #expect(sent.confirmed?.size == 40 << 20, "not the content expected, but read again and found as sent")
        let expected = try #require(try await upload(file, fixture.client, expecting: whole) { true })
        #expect(expected.hash == whole && expected.confirmed == nil, "the content expected needs no second reading")
    }

    /// A file changed after it was read, in bytes that are not read again to be sent (a chunk the server holds
    /// already), is not confirmed: its second reading finds other bytes, and the round leaves it for the next.
    @Test func aFileChangedAfterItWasReadIsNotConfirmed() async throws {
        let fixture = try await DeviceSyncTests.Fixture.make()
        let file = try movie(seed: 32)
        var first: (bytes: Data, hash: String)?
        let whole = try await FileContent.chunks(of: file) { chunk, hash in
            if first == nil { first = (Data(chunk), hash) }
        }
        let held = try #require(first)
        try await fixture.client.upload(chunk: ByteBuffer(bytes: held.bytes), hash: held.hash)

        let edit = FirstChunkEdit(file)
        let sent = try #require(try await upload(file, fixture.client, stillPlanned: edit.stillPlanned))
        #expect(edit.happened)
        #expect(sent.hash == whole, "what was read and stored")
        #expect(sent.confirmed == nil, "the file no longer holds those bytes")
    }

    /// A file of 40 MB of seeded bytes in a folder of its own: at least ten chunks (4 MiB at most each), so the first
    /// question is asked after the file is read on.
    private func movie(seed: UInt64) throws -> URL {
        let folder = TestResources.temporaryDirectory(prefix: "nimbus-large-upload")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("movie.mov")
        var generator = SeededGenerator(seed: seed)
        try generator.bytes(40 << 20).write(to: file)
        return file
    }

    /// A `stillPlanned` that writes over the file's first bytes the first time it is asked: before the first
    /// question, when the first chunks are hashed and none is sent yet.
    final class FirstChunkEdit: Sendable {
        let file: URL
        private let done = Mutex(false)

        init(_ file: URL) { self.file = file }

        var happened: Bool { done.withLock { $0 } }

        func stillPlanned() -> Bool {
            done.withLock { done in
                guard !done, let handle = FileHandle(forWritingAtPath: file.path) else { return }
                try? handle.write(contentsOf: Data("an edit in the first chunk".utf8))
                try? handle.close()
                done = true
            }
            return true
        }
    }

    /// The file's upload; nil when it changed while it was sent.
    private func upload(
        _ file: URL, _ client: DocumentClient, expecting expected: String? = nil,
        stillPlanned: @escaping @Sendable () -> Bool
    ) async throws -> LargeUpload.Stored? {
        let upload = try LargeUpload(
            ItemID("movie"), file: file, client: client, activity: SyncActivity(), stillPlanned: stillPlanned)
        do {
            return try await upload.run(expecting: expected)
        } catch is LargeUpload.ChangedWhileSent {
            return nil
        }
    }

    /// The reader waits once the bytes read and not yet given back would pass the limit, and goes on when enough
    /// are given back, or when the upload ends; a chunk larger than the limit passes when nothing is outstanding.
    @Test func theReaderWaitsAtTheLimitUntilBytesAreGivenBack() async throws {
        let readAhead = ReadAhead(limit: 100)
        await readAhead.take(250)
        readAhead.give(250)
        await readAhead.take(60)
        let taken = Mutex(false)
        let taker = Task {
            await readAhead.take(60)
            taken.withLock { $0 = true }
        }
        #expect(await eventually { readAhead.isWaiting })
        #expect(!taken.withLock { $0 })
        readAhead.give(60)
        await taker.value
        #expect(taken.withLock { $0 } && !readAhead.isWaiting)

        let stuck = Task { await readAhead.take(60) }
        #expect(await eventually { readAhead.isWaiting })
        readAhead.close()
        await stuck.value
        #expect(!readAhead.isWaiting)
    }
}
