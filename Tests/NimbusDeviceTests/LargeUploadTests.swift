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
    /// changed while sent, for the next round to read the file again. The file as it is then is stored whole, with
    /// its details as they are: it did not change while it was read, expected or not.
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
        let details = try Self.details(of: file)
        #expect(sent.confirmed?.size == 40 << 20 && sent.confirmed?.modified == details.modified)
        let expected = try #require(try await upload(file, fixture.client, expecting: whole) { true })
        #expect(expected.hash == whole && expected.confirmed?.inode == details.inode)
    }

    /// A file written over while it is read, with the bytes it held, is not known the same from the reading alone
    /// (its time changed): it is read again, every chunk at its offset, and confirmed with its details as they are
    /// now. The file this first reading found changed, then, is one whose bytes changed (the test below).
    @Test func aFileWrittenOverWithItsOwnBytesIsConfirmedByASecondReading() async throws {
        let fixture = try await DeviceSyncTests.Fixture.make()
        let file = try movie(seed: 33)
        let before = try Self.details(of: file)
        let edit = FirstChunkEdit(file, sameBytes: true)
        let sent = try #require(try await upload(file, fixture.client, stillPlanned: edit.stillPlanned))
        #expect(edit.happened)
        #expect(sent.hash == (try FileContent.hash(of: file)))
        let after = try Self.details(of: file)
        #expect(after.modified != before.modified, "the edit moved the file's time")
        #expect(sent.confirmed?.modified == after.modified && sent.confirmed?.size == 40 << 20)
    }

    /// A file changed after it was read, in bytes that are not read again to be sent (a chunk the server holds
    /// already), is not confirmed: its second reading finds other bytes, and the round leaves it for the next.
    /// The change is in the first of the second reading's two stretches, and (the test after) in the last.
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

    /// A write that puts the file's modification time back (as `cp -p` or `rsync -t` do) still shows: a file so
    /// changed after it was read, in bytes not read again to be sent, is read again and not confirmed.
    @Test func aWriteThatPutsTheTimeBackIsNotMissed() async throws {
        let fixture = try await DeviceSyncTests.Fixture.make()
        let file = try movie(seed: 35)
        var first: (bytes: Data, hash: String)?
        _ = try await FileContent.chunks(of: file) { chunk, hash in
            if first == nil { first = (Data(chunk), hash) }
        }
        let held = try #require(first)
        try await fixture.client.upload(chunk: ByteBuffer(bytes: held.bytes), hash: held.hash)
        // Settled before the upload begins, so the reading trusts what it reads from the start.
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        #expect(await eventually { FileLook.of(file.path, open: descriptor)?.isSettled() == true })

        let edit = FirstChunkEdit(file, keepsTime: true)
        let sent = try #require(try await upload(file, fixture.client, stillPlanned: edit.stillPlanned))
        #expect(edit.happened)
        #expect(try Self.details(of: file).modified == edit.timeBefore, "the edit left the modification time as it was")
        #expect(sent.confirmed == nil, "the file no longer holds the bytes read")
    }

    /// A file's details show a later write only once the clock has moved past its last change by more than a
    /// time stamp's granularity: 50 ms where times have nanoseconds, 2 s where they are whole seconds.
    @Test func detailsAreSettledOnceAWriteWouldShow() throws {
        let file = TestResources.temporaryDirectory(prefix: "nimbus-file-look").appendingPathExtension("txt")
        try Data("words".utf8).write(to: file)
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        let entry = try #require(FileLook.of(file.path, open: descriptor)).entry
        let fine = FileLook(entry: entry, changed: 1_700_000_000_123_456_789)
        #expect(!fine.isSettled(at: fine.changed + 10_000_000) && fine.isSettled(at: fine.changed + 60_000_000))
        let coarse = FileLook(entry: entry, changed: 1_700_000_000_000_000_000)
        #expect(!coarse.isSettled(at: coarse.changed + 1_500_000_000) && coarse.isSettled(at: coarse.changed + 2_100_000_000))
    }

    /// The second reading checks every chunk, in each of its readers' stretches: a byte changed in the last
    /// chunk fails it as one in the first does.
    @Test func aSecondReadingFindsAChangeInAnyChunk() async throws {
        let file = try movie(seed: 34)
        var chunks: [(offset: Int64, chunk: DocumentChunk)] = []
        var offset: Int64 = 0
        _ = try await FileContent.chunks(of: file) { bytes, hash in
            chunks.append((offset, DocumentChunk(hash: hash, size: Int64(bytes.count))))
            offset += Int64(bytes.count)
        }
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        defer { close(descriptor) }
        for readers in [1, 2, 3] {
            #expect(await FileContent.holds(chunks, of: descriptor, readers: readers), "\(readers) readers")
        }
        for position in [chunks[0].offset, chunks[chunks.count / 2].offset + 1, offset - 1] {
            let handle = try FileHandle(forUpdating: file)
            try handle.seek(toOffset: UInt64(position))
            let old = try #require(try handle.read(upToCount: 1)?.first)
            try handle.seek(toOffset: UInt64(position))
            try handle.write(contentsOf: Data([old ^ 0xFF]))
            for readers in [1, 2, 3] {
                #expect(
                    await !FileContent.holds(chunks, of: descriptor, readers: readers), "byte \(position), \(readers) readers")
            }
            try handle.seek(toOffset: UInt64(position))
            try handle.write(contentsOf: Data([old]))
            try handle.close()
        }
    }

    /// What is read again to confirm a file: the chunks read before its details were last as they are at the end;
    /// all of them when the details changed after the last look, came back to details seen earlier, or the file is
    /// gone.
    @Test func onlyWhatWasReadBeforeTheFileLastChangedIsReadAgain() {
        var settled = SettledDetails<Int>()
        #expect(settled.stale(now: 1, read: 4) == 4, "never looked at")
        settled.look(1, read: 0)
        settled.look(1, read: 8)
        #expect(settled.stale(now: 1, read: 12) == 0, "the same from the first look to the end")
        settled.look(2, read: 16)
        settled.look(2, read: 24)
        #expect(settled.stale(now: 2, read: 30) == 16)
        #expect(settled.stale(now: 3, read: 30) == 30, "changed after the last look")
        #expect(settled.stale(now: 1, read: 30) == 30, "back to details seen before the last change")
        #expect(settled.stale(now: nil, read: 30) == 30, "gone")
        settled.look(nil, read: 32)
        #expect(settled.stale(now: nil, read: 40) == 40, "gone at the last look too")
    }

    /// A file's inode, size and modification time (nanoseconds), as `LargeUpload` reads them.
    private static func details(of file: URL) throws -> (inode: UInt64, size: Int64, modified: Int64) {
        var status = stat()
        guard lstat(file.path, &status) == 0 else { throw POSIXError(.ENOENT) }
        return (
            UInt64(status.st_ino), Int64(status.st_size),
            Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        )
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
    /// question, when the first chunks are hashed and none is sent yet. With `sameBytes`, with the bytes they
    /// hold. The file's modification time is moved a second on, so the edit shows in it on any clock, or with
    /// `keepsTime` put back as it was.
    final class FirstChunkEdit: Sendable {
        let file: URL
        let sameBytes: Bool
        let keepsTime: Bool
        private let done = Mutex<(happened: Bool, timeBefore: Int64?)>((false, nil))

        init(_ file: URL, sameBytes: Bool = false, keepsTime: Bool = false) {
            self.file = file
            self.sameBytes = sameBytes
            self.keepsTime = keepsTime
        }

        var happened: Bool { done.withLock { $0.happened } }
        /// The file's modification time before the edit, in nanoseconds.
        var timeBefore: Int64? { done.withLock { $0.timeBefore } }

        func stillPlanned() -> Bool {
            done.withLock { done in
                var status = stat()
                guard !done.happened, stat(file.path, &status) == 0, let handle = FileHandle(forUpdatingAtPath: file.path)
                else { return }
                let edit = Data("an edit in the first chunk".utf8)
                let bytes = sameBytes ? (try? handle.read(upToCount: edit.count)) ?? edit : edit
                try? handle.seek(toOffset: 0)
                try? handle.write(contentsOf: bytes)
                try? handle.close()
                var times = [status.st_atim, status.st_mtim]
                if !keepsTime { times[1].tv_sec += 1 }
                _ = utimensat(AT_FDCWD, file.path, &times, 0)
                done = (true, Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec))
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
