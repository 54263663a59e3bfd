import Crypto
import Foundation
import NIOCore
import NimbusCore
import Synchronization

/// Blobs as objects in an S3-compatible bucket (`S3Client`), named by their ids under the location's
/// prefix. A blob exists once its object does: written whole in one request, or in parts of `partBytes`
/// completed only when finished (and, for a chunk, once its bytes hash to its name), so nothing partial is
/// ever visible.
///
/// A sweep cannot touch files, so `retain` leaves a marker object (`retained/<id>`) whose time of writing
/// the sweep reads as the blob's last use. What keeps a sweep from deleting a blob that `retain` has just
/// reported stored is `decisions`, held while either decides on one blob: a lock every node using the
/// bucket shares.
package final class S3BlobStore: BlobStore {
    private let client: S3Client
    private let decisions: any BlobDecisionLock
    /// Bytes a writer holds before sending them as one part of a multipart upload (S3 wants at least 5 MiB).
    static let partBytes = 8 << 20
    static let retainedPrefix = "retained/"

    package init(client: S3Client, decisions: any BlobDecisionLock) {
        self.client = client
        self.decisions = decisions
    }

    package func makeWriter(maxBytes: Int64) async throws -> any BlobWriter {
        S3BlobWriter(client: client, id: Secrets.apiToken(), maxBytes: maxBytes, contentAddressed: false)
    }

    package func makeChunkWriter(hash: String, maxBytes: Int64) async throws -> any BlobWriter {
        guard DocumentNames.isHash(hash) else { throw BlobMismatch(actual: hash) }
        return S3BlobWriter(client: client, id: hash, maxBytes: maxBytes, contentAddressed: true)
    }

    package func storeChunks(_ chunks: [ChunkBundle.Chunk]) async throws {
        for chunk in chunks where !chunk.isHashed {
            let actual = Secrets.hex(SHA256.hash(data: chunk.bytes))
            guard actual == chunk.hash else { throw BlobMismatch(actual: actual) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for chunk in chunks {
                group.addTask { try await self.client.put(chunk.hash, ByteBuffer(bytes: chunk.bytes)) }
            }
            try await group.waitForAll()
        }
    }

    package func sizes(_ ids: [String]) async throws -> [String: Int64] {
        try await withThrowingTaskGroup(of: (String, Int64?).self) { group in
            for id in Set(ids) where Self.isBlobID(id) {
                group.addTask { (id, try await self.client.size(of: id.lowercased())) }
            }
            var sizes = [String: Int64]()
            for try await (id, size) in group { sizes[id] = size }
            return sizes
        }
    }

    package func load(_ ids: [String], maxBytes: Int) async throws -> [String: Data] {
        // A few at a time: each object is a round trip to the store, and a bundle names many.
        var pending = Set(ids.filter(Self.isBlobID)).makeIterator()
        let budget = ByteBudget(limit: maxBytes)
        return try await withThrowingTaskGroup(of: (String, Data?).self) { group in
            func startNext() {
                guard let id = pending.next() else { return }
                group.addTask { (id, try await self.loadOne(id, budget: budget)) }
            }
            for _ in 0..<Self.loadsInFlight { startNext() }
            var loaded = [String: Data]()
            while let (id, bytes) = try await group.next() {
                loaded[id] = bytes
                startNext()
            }
            return loaded
        }
    }

    /// Objects `load` reads at once.
    static let loadsInFlight = 8

    /// One object's bytes, or nil when there is none; throws `BlobTooLarge` once the load's bytes pass its limit.
    private func loadOne(_ id: String, budget: ByteBudget) async throws -> Data? {
        var bytes = Data()
        do {
            try await client.get(id.lowercased()) { piece in
                guard budget.take(piece.readableBytes) else { throw BlobTooLarge(limit: Int64(budget.limit)) }
                bytes.append(contentsOf: piece.readableBytesView)
            }
        } catch let error as S3Error where error.code == "NoSuchKey" {
            return nil
        }
        return bytes
    }

    package func read(_ id: String, range: ClosedRange<Int64>?, into consume: (ByteBuffer) async throws -> Void) async throws {
        guard Self.isBlobID(id) else { throw StoreError.missing("blob \(id.prefix(80))") }
        do {
            try await client.get(id.lowercased(), range: range, into: consume)
        } catch let error as S3Error where error.code == "InvalidRange" {
            // S3 refuses any range of an empty object (the only blob a caller's checked range can miss).
            return
        } catch let error as S3Error where error.code == "NoSuchKey" {
            throw StoreError.missing("blob \(id)")
        }
    }

    package func retain(_ ids: [String]) async throws -> Set<String> {
        var retained = Set<String>()
        for id in ids where Self.isBlobID(id) {
            let key = id.lowercased()
            // Under the decision lock, a blob is either swept already or marked before the sweep looks.
            let stored = try await decisions.withLock {
                guard try await self.client.size(of: key) != nil else { return false }
                try await self.client.put(Self.retainedPrefix + key, ByteBuffer())
                return true
            }
            if stored { retained.insert(id) }
        }
        return retained
    }

    package func sweep(keeping live: Set<String>, writtenBefore cutoff: Date) async throws -> Int {
        // While a backup copies blobs, this sweep is skipped; the next one collects what it would have.
        try await decisions.sweepingUnlessHeldOff {
            try await self.sweepPages(keeping: Set(live.map { $0.lowercased() }), writtenBefore: cutoff)
        } ?? 0
    }

    private func sweepPages(keeping live: Set<String>, writtenBefore cutoff: Date) async throws -> Int {
        var deleted = 0
        var continuation: String?
        repeat {
            let page = try await client.list(continuation: continuation)
            continuation = page.next
            // Markers outlive their use once older than the cutoff: each retained blob is named by now, or swept.
            for object in page.objects where object.key.hasPrefix(Self.retainedPrefix) && object.lastModified < cutoff {
                try await decisions.withLock {
                    // A `retain` since the listing may have written it again.
                    if let marker = try await self.client.head(object.key), marker.lastModified < cutoff {
                        try await self.client.delete(object.key)
                    }
                }
            }
            for object in page.objects
            where Self.isBlobID(object.key) && !live.contains(object.key) && object.lastModified < cutoff {
                let removed = try await decisions.withLock {
                    // Read again under the lock: a `retain` since the listing wrote its marker.
                    if let marker = try await self.client.head(Self.retainedPrefix + object.key), marker.lastModified >= cutoff {
                        return false
                    }
                    try await self.client.delete(object.key)
                    try await self.client.delete(Self.retainedPrefix + object.key)
                    return true
                }
                if removed { deleted += 1 }
            }
        } while continuation != nil
        return deleted
    }

    package func list(_ each: ([StoredBlobSize]) async throws -> Void) async throws {
        var continuation: String?
        repeat {
            let page = try await client.list(continuation: continuation)
            continuation = page.next
            try await each(page.objects.filter { Self.isBlobID($0.key) }.map { StoredBlobSize(id: $0.key, size: $0.size) })
        } while continuation != nil
    }

    package func holdingOffSweeps<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await decisions.holdingOffSweeps(body)
    }

    package func makeWriter(restoring id: String, maxBytes: Int64) async throws -> any BlobWriter {
        guard Self.isBlobID(id) else { throw StoreError.missing("blob \(id.prefix(80))") }
        return S3BlobWriter(client: client, id: id.lowercased(), maxBytes: maxBytes, contentAddressed: false)
    }

    /// Blob ids are 64 hexadecimal characters (any case); anything else names no blob.
    private static func isBlobID(_ id: String) -> Bool { Secrets.isAPITokenShaped(id) }
}

/// The bytes a `load` may hold, shared by the objects it reads at once.
private final class ByteBudget: Sendable {
    let limit: Int
    private let used = Atomic(0)

    init(limit: Int) { self.limit = limit }

    /// Counts `count` more bytes; whether the total stays within the limit.
    func take(_ count: Int) -> Bool { used.add(count, ordering: .relaxed).newValue <= limit }
}

/// Held while a sweep decides on and deletes one blob, and while `retain` marks one; shared by every node
/// that uses the bucket. It also keeps sweeps and backups apart.
package protocol BlobDecisionLock: Sendable {
    func withLock<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T
    /// Runs `body` (a sweep) unless a backup holds sweeps off: then nil at once.
    func sweepingUnlessHeldOff<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T?
    /// Runs `body` (a backup) once no sweep runs, skipping the sweeps that start meanwhile.
    func holdingOffSweeps<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T
}

/// The decision lock of an embedded deployment's one node: decisions are taken in its process; sweeps are
/// kept from backups, which run as processes of their own (`nimbus backup`), by a file lock (`sweepGate`,
/// the data directory's, as for blobs in its folder).
package final class ProcessDecisionLock: BlobDecisionLock {
    private let decisions = AsyncTurns()
    private let sweepGate: URL

    package init(sweepGate: URL) { self.sweepGate = sweepGate }

    package func withLock<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        await decisions.take()
        do {
            let result = try await body()
            await decisions.give()
            return result
        } catch {
            await decisions.give()
            throw error
        }
    }

    package func sweepingUnlessHeldOff<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await BackupFiles.holdingLockIfFree(sweepGate, body)
    }

    package func holdingOffSweeps<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await BackupFiles.holdingLock(sweepGate, shared: true, body)
    }
}

/// One holder at a time, the others waiting in order.
private actor AsyncTurns {
    private var held = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func take() async {
        guard held else {
            held = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func give() {
        if waiting.isEmpty { held = false } else { waiting.removeFirst().resume() }
    }
}

/// One blob being written to the bucket: held in memory up to a part, sent in parts beyond.
///
/// @unchecked Sendable: its caller (one upload) awaits every call before the next, so its state is never
/// touched by two tasks at once.
final class S3BlobWriter: BlobWriter, @unchecked Sendable {
    private let client: S3Client
    private let id: String
    private let maxBytes: Int64
    private let contentAddressed: Bool
    private var hasher = SHA256()
    private var size: Int64 = 0
    private var pending = ByteBuffer()
    private var upload: (id: String, tags: [String])?
    private var ended = false

    init(client: S3Client, id: String, maxBytes: Int64, contentAddressed: Bool) {
        self.client = client
        self.id = id
        self.maxBytes = maxBytes
        self.contentAddressed = contentAddressed
    }

    func write(_ bytes: Data) async throws {
        size += Int64(bytes.count)
        guard size <= maxBytes else {
            await discard()
            throw BlobTooLarge(limit: maxBytes)
        }
        hasher.update(data: bytes)
        pending.writeBytes(bytes)
        do {
            while pending.readableBytes >= S3BlobStore.partBytes {
                try await sendPart(pending.readSlice(length: S3BlobStore.partBytes)!)
            }
        } catch {
            await discard()
            throw error
        }
    }

    func finish() async throws -> StoredBlob {
        let digest = Data(hasher.finalize())
        if contentAddressed {
            let actual = Secrets.hex(digest)
            guard actual == id else {
                await discard()
                throw BlobMismatch(actual: actual)
            }
        }
        do {
            if let upload {
                if pending.readableBytes > 0 { try await sendPart(pending) }
                try await client.completeUpload(id, upload: upload.id, parts: self.upload!.tags)
            } else {
                try await client.put(id, pending)
            }
        } catch {
            await discard()
            throw error
        }
        ended = true
        return StoredBlob(id: id, size: size, checksum: digest.base64EncodedString())
    }

    func discard() async {
        guard !ended else { return }
        ended = true
        pending = ByteBuffer()
        if let upload { try? await client.abortUpload(id, upload: upload.id) }
    }

    private func sendPart(_ part: ByteBuffer) async throws {
        if upload == nil { upload = (try await client.startUpload(id), []) }
        let tag = try await client.uploadPart(id, upload: upload!.id, number: upload!.tags.count + 1, part)
        upload!.tags.append(tag)
    }
}
