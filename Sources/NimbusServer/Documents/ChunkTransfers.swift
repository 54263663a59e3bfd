import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// `/blobs/1/{container}/{environment}/…`: document chunks. A chunk is stored once by its SHA-256
/// whoever uploads it, but a user holds only the chunks they uploaded themselves (recorded in their
/// container's zone as `c/<hash>`): knowing a hash never lets anyone claim, or download, another
/// user's bytes.
struct ChunkTransfers: Sendable {
    let server: ServerState
    /// Bytes of an uploaded chunk written to the blob store at a time.
    static let writeSize = 1 << 20

    /// Which of `hashes` the caller must upload before naming them in a version.
    func missing(_ zone: ZoneKey, _ request: ChunksMissingRequest) async throws -> ChunksMissingResponse {
        guard request.hashes.count <= DocumentService.maxHashesPerQuestion else {
            throw NimbusError.badRequest("ask about at most \(DocumentService.maxHashesPerQuestion) chunks at a time")
        }
        for hash in request.hashes where !DocumentNames.isHash(hash) {
            throw NimbusError.badRequest("\"\(hash.prefix(80))\" is not a SHA-256 in lowercase hexadecimal")
        }
        // Held chunks no version names yet are kept from the collector for its grace period (an hour),
        // in which the client saves the version naming them.
        let held = try await server.blobs.retain(try await heldChunks(zone, request.hashes))
        return ChunksMissingResponse(missing: request.hashes.filter { !held.contains($0) })
    }

    /// Stores the body as the chunk `hash` once it is checked to hash to it, and records that the
    /// caller holds it. Uploading a chunk again is harmless, so an interrupted upload resumes by
    /// asking which chunks are missing.
    func upload(_ zone: ZoneKey, hash: String, body: RequestBody) async throws {
        guard DocumentNames.isHash(hash) else {
            throw NimbusError.badRequest("a chunk is named by its SHA-256 in lowercase hexadecimal")
        }
        let writer = try await server.blobs.makeChunkWriter(hash: hash, maxBytes: DocumentService.maxChunkBytes)
        let size: Int64
        do {
            var buffers = body.makeAsyncIterator()
            var pending = ByteBuffer()
            while true {
                // Only the body's own failures are the client's; the blob store's (a full disk, an object store
                // gone) are the server's.
                let buffer: ByteBuffer?
                do {
                    buffer = try await buffers.next()
                } catch {
                    await writer.discard()
                    throw NimbusError.badRequest("the upload ended before it was complete")
                }
                // The body arrives in pieces of tens of kilobytes; each write is a hop to a blocking thread, so
                // they are gathered into writes of `writeSize`.
                if var buffer {
                    pending.writeBuffer(&buffer)
                    guard pending.readableBytes >= Self.writeSize else { continue }
                }
                if pending.readableBytes > 0 {
                    try await writer.write(Data(buffer: pending))
                    pending.clear()
                }
                if buffer == nil { break }
            }
            size = try await writer.finish().size
        } catch is BlobTooLarge {
            throw NimbusError(.requestTooLarge, "a chunk holds at most \(DocumentService.maxChunkBytes) bytes")
        } catch let mismatch as BlobMismatch {
            throw NimbusError(.chunkMismatch, "the chunk's bytes hash to \(mismatch.actual), not \(hash); nothing was stored")
        } catch let error as NimbusError {
            throw error
        } catch {
            await writer.discard()
            throw error
        }
        try await hold(zone, [hash: size])
    }

    /// Stores every chunk of a bundle (`ChunkBundle`) and records that the caller holds them: all or,
    /// when one does not hash to its name or they would overfill the owner's storage, none.
    func upload(_ zone: ZoneKey, bundle body: RequestBody) async throws {
        let tooLarge = NimbusError(
            .requestTooLarge, "a bundle holds at most \(ChunkBundle.maxBytes) bytes of at most \(ChunkBundle.maxChunks) chunks")
        let collected = try await body.collect(
            upTo: ChunkBundle.maxBodyBytes, orThrow: tooLarge)
        let chunks: [ChunkBundle.Chunk]
        do {
            chunks = try ChunkBundle.decode(Data(buffer: collected))
        } catch let malformed as ChunkBundle.Malformed {
            throw NimbusError.badRequest(malformed.reason)
        }
        guard chunks.reduce(0, { $0 + $1.bytes.count }) <= ChunkBundle.maxBytes else { throw tooLarge }
        if let wrong = chunks.first(where: { !(1...DocumentService.maxChunkBytes).contains(Int64($0.bytes.count)) }) {
            throw NimbusError.badRequest(
                "chunk \(wrong.hash) holds \(wrong.bytes.count) bytes; a chunk holds 1 to \(DocumentService.maxChunkBytes)")
        }
        do {
            try await server.blobs.storeChunks(chunks)
        } catch let mismatch as BlobMismatch {
            throw NimbusError(.chunkMismatch, "a chunk's bytes hash to \(mismatch.actual), not its name; nothing was stored")
        }
        try await hold(zone, Dictionary(chunks.map { ($0.hash, Int64($0.bytes.count)) }, uniquingKeysWith: { a, _ in a }))
    }

    /// Records that the caller holds the chunks (hash → size), counting them against the owner's quota
    /// until a version names them; over the quota, none is recorded.
    func hold(_ zone: ZoneKey, _ sizes: [String: Int64]) async throws {
        let (now, quota) = (server.configuration.now().milliseconds, Int(server.configuration.userQuotaBytes))
        _ = try await server.store.transact(zone, creating: true) { transaction in
            let before = try transaction.ownerBytes()
            for (hash, size) in sizes.sorted(by: { $0.key < $1.key }) {
                if let held = try ChunkHolding.read(hash, in: transaction), held.named { continue }
                try ChunkHolding(size: size, uploadedAt: now, named: false).write(hash, in: transaction)
            }
            let used = try transaction.ownerBytes()
            guard used <= quota || used <= before else {
                throw NimbusError(
                    .quotaExceeded, "the owner's storage is full: these chunks would make it \(used) bytes of \(quota)")
            }
        }
    }

    /// Tells the caller's other devices that chunks of a large file's coming version are stored, so they
    /// download them while the rest still uploads. Only chunks the caller holds, at the sizes stored, are
    /// announced: an announcement never makes a device fetch what is not there.
    func announce(_ zone: ZoneKey, _ announcement: ChunksAnnouncement, deviceID: String) async throws {
        try DocumentKeys.validateItemID(announcement.itemID)
        let (from, chunks) = (announcement.from, announcement.chunks)
        guard (1...ChunksAnnouncement.maxChunks).contains(chunks.count), from >= 0,
            from <= DocumentNames.maxChunks - chunks.count
        else {
            throw NimbusError.badRequest(
                "announce 1 to \(ChunksAnnouncement.maxChunks) chunks from a position 0 or more, within a version's \(DocumentNames.maxChunks)"
            )
        }
        if let bad = chunks.first(where: {
            !DocumentNames.isHash($0.hash) || !(1...DocumentService.maxChunkBytes).contains($0.size)
        }) {
            throw NimbusError.badRequest(
                "chunk \"\(bad.hash.prefix(80))\" of \(bad.size) bytes: a chunk is named by its SHA-256 in lowercase hexadecimal and holds 1 to \(DocumentService.maxChunkBytes) bytes"
            )
        }
        let stored = try await heldSizes(zone, chunks.map(\.hash))
        if let absent = chunks.first(where: { stored[$0.hash] != $0.size }) {
            throw NimbusError(
                .chunkMissing,
                "chunk \(absent.hash) of \(absent.size) bytes was not uploaded; announce chunks once they are stored")
        }
        var message = PushMessage(type: .chunksAnnounced, zone: zone.address, sequence: 0)
        message.announcement = ChunksAnnouncement(itemID: announcement.itemID, from: from, chunks: chunks, device: deviceID)
        server.push.publish(to: zone.accountID, message)
    }

    /// The chunks' bytes in one bundle (`ChunkBundle`), in the order asked; every one must be the caller's.
    func fetch(_ zone: ZoneKey, _ request: ChunksFetchRequest) async throws -> Response {
        guard request.hashes.count <= ChunkBundle.maxChunks else {
            throw NimbusError.badRequest("fetch at most \(ChunkBundle.maxChunks) chunks at a time")
        }
        if let bad = request.hashes.first(where: { !DocumentNames.isHash($0) }) {
            throw NimbusError.badRequest("\"\(bad.prefix(80))\" is not a SHA-256 in lowercase hexadecimal")
        }
        let held = Set(try await heldChunks(zone, request.hashes))
        if let absent = request.hashes.first(where: { !held.contains($0) }) {
            throw NimbusError.notFound("no chunk \(absent) among this user's documents")
        }
        let loaded: [String: Data]
        do {
            // A hash asked for twice is read once and counted once: the bundle's limit is on what is read.
            loaded = try await server.blobs.load(request.hashes, maxBytes: ChunkBundle.maxBytes)
        } catch is BlobTooLarge {
            throw NimbusError(
                .requestTooLarge, "the chunks asked for hold more than \(ChunkBundle.maxBytes) bytes; ask for fewer at a time")
        }
        let chunks = try request.hashes.map { hash in
            guard let bytes = loaded[hash] else { throw NimbusError.notFound("no chunk \(hash) among this user's documents") }
            return ChunkBundle.Chunk(hash: hash, bytes: bytes)
        }
        let body = ChunkBundle.encode(chunks)
        return Response(
            status: .ok, headers: [.contentType: "application/octet-stream"],
            body: ResponseBody(byteBuffer: ByteBuffer(data: body)))
    }

    /// The chunk's bytes, or the part a `Range: bytes=…` header asks for.
    func download(_ zone: ZoneKey, hash: String, range: String?) async throws -> Response {
        guard DocumentNames.isHash(hash), try await heldChunks(zone, [hash]) == [hash],
            let size = try await server.blobs.size(hash)
        else {
            throw NimbusError.notFound("no chunk \(hash.prefix(80)) among this user's documents")
        }
        var headers: HTTPFields = [.contentType: "application/octet-stream", .acceptRanges: "bytes"]
        guard let range = range.flatMap({ ByteRange(header: $0) }) else {
            return Response(status: .ok, headers: headers, body: try await server.blobs.responseBody(hash, size: size))
        }
        guard let bounds = range.bounds(size: Int(size)) else {
            headers[.contentRange] = "bytes */\(size)"
            throw NimbusError(.rangeNotSatisfiable, "the chunk holds \(size) bytes; the range asked for lies beyond them")
        }
        headers[.contentRange] = "bytes \(bounds.lowerBound)-\(bounds.upperBound)/\(size)"
        return Response(
            status: .partialContent, headers: headers,
            body: try await server.blobs.responseBody(hash, range: Int64(bounds.lowerBound)...Int64(bounds.upperBound)))
    }

    private func heldChunks(_ zone: ZoneKey, _ hashes: [String]) async throws -> [String] {
        let stored = try await heldSizes(zone, hashes)
        return hashes.filter { stored[$0] != nil }
    }

    /// The stored sizes of the chunks among `hashes` that the caller holds.
    private func heldSizes(_ zone: ZoneKey, _ hashes: [String]) async throws -> [String: Int64] {
        let entries = try await server.store.entries(zone, keys: hashes.map(DocumentKeys.chunk))
        let held = Set(entries.filter { $0.payload != nil }.map { String($0.key.dropFirst(2)) })
        return try await server.blobs.sizes(hashes.filter { held.contains($0) })
    }
}

/// One range of a `Range: bytes=…` header (RFC 9110 §14.1.2). Anything else (several ranges, another
/// unit, bad syntax) is no range: the whole body is sent, as the RFC allows.
struct ByteRange: Equatable {
    var first: Int?
    var last: Int?

    init?(header: String) {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let (from, to) = (spec[0].trimmingCharacters(in: .whitespaces), spec[1].trimmingCharacters(in: .whitespaces))
        guard from.allSatisfy(\.isASCIIDigitCharacter), to.allSatisfy(\.isASCIIDigitCharacter), !(from.isEmpty && to.isEmpty)
        else {
            return nil
        }
        first = from.isEmpty ? nil : Int(from)
        last = to.isEmpty ? nil : Int(to)
        if !from.isEmpty && first == nil || !to.isEmpty && last == nil { return nil }
        if let first, let last, last < first { return nil }
    }

    /// The bytes asked for in a body of `size`, or nil when none of them exist.
    func bounds(size: Int) -> ClosedRange<Int>? {
        switch (first, last) {
        case (let first?, let last):
            guard first < size else { return nil }
            return first...min(last ?? size - 1, size - 1)
        case (nil, let suffix?):
            guard suffix > 0, size > 0 else { return nil }
            return max(0, size - suffix)...(size - 1)
        case (nil, nil):
            return nil
        }
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
