import Crypto
import Foundation
import NIOCore
import NimbusCore

/// Reading a file's content: its hash, and its chunks. Both read into one buffer of their own and hash the
/// bytes where they lie: a large file's upload reads it at the speed of its hashing, not of copies.
package enum FileContent {
    static let readSize = 4 << 20

    /// The SHA-256 of the file's bytes, or of its first `size` only: a scan hashes the bytes it listed, so a file
    /// still being written is not chased to its end (its upload reads on as it grows).
    package static func hash(of file: URL, upTo size: Int64 = .max) throws -> String {
        let descriptor = try open(file)
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readSize, alignment: 16)
        defer { buffer.deallocate() }
        var hasher = SHA256()
        var left = size
        while left > 0 {
            let count = try read(
                descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(left, Int64(readSize)))]))
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            left -= Int64(count)
        }
        return Secrets.hex(hasher.finalize())
    }

    /// Calls `body` with each chunk of the file in order (never more than the chunker's largest chunk
    /// and one read in memory); returns the whole file's SHA-256. The bytes `body` is given lie in the read
    /// buffer, valid only until it returns: a caller that keeps them copies them (most need only their size).
    package static func chunks(
        of file: URL, chunker: ContentDefinedChunker = .standard, _ body: (UnsafeRawBufferPointer, String) async throws -> Void
    ) async throws -> String {
        let descriptor = try open(file)
        defer { close(descriptor) }
        return try await chunks(of: descriptor, chunker: chunker, body)
    }

    /// `chunks(of:)` of a file open for reading, from its current offset.
    static func chunks(
        of descriptor: Int32, chunker: ContentDefinedChunker = .standard,
        _ body: (UnsafeRawBufferPointer, String) async throws -> Void
    ) async throws -> String {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunker.maximumSize + readSize, alignment: 16)
        defer { buffer.deallocate() }
        var whole = SHA256()
        // The unread part of the buffer is start..<end; the chunker needs the rest of the file or at least its
        // largest chunk's worth, so the remainder moves to the front (less than a chunk) before each refill.
        var (start, end, ended) = (0, 0, false)
        while true {
            if !ended && end - start < chunker.maximumSize {
                buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: end - start)
                (start, end) = (0, end - start)
                while !ended && end < chunker.maximumSize {
                    let count = try read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[end...]))
                    if count == 0 { ended = true }
                    end += count
                }
            }
            if start == end { break }
            let unread = UnsafeRawBufferPointer(rebasing: buffer[start..<end])
            let chunk = UnsafeRawBufferPointer(rebasing: unread[..<chunker.nextChunkLength(in: unread)])
            whole.update(bufferPointer: chunk)
            start += chunk.count
            try await body(chunk, Secrets.hex(SHA256.hash(data: chunk)))
        }
        return Secrets.hex(whole.finalize())
    }

    /// Whether a file open for reading holds each chunk at its offset: its bytes there hash to its name. `readers`
    /// tasks read at once, each its own stretch of the file.
    package static func holds(_ chunks: [(offset: Int64, chunk: DocumentChunk)], of descriptor: Int32, readers: Int) async -> Bool
    {
        let end = chunks.last.map { $0.offset + $0.chunk.size } ?? 0
        let starts = (0..<readers).map { reader in chunks.firstIndex { $0.offset >= end * Int64(reader) / Int64(readers) } }
        let stretches = zip(starts, starts.dropFirst() + [chunks.endIndex]).compactMap { start, next in
            start.map { chunks[$0..<(next ?? chunks.endIndex)] }
        }
        return await withTaskGroup(of: Bool.self) { group in
            for stretch in stretches where !stretch.isEmpty {
                group.addTask {
                    var buffer = ByteBuffer()
                    return stretch.allSatisfy { offset, chunk in
                        buffer.clear()
                        return (try? bytes(of: descriptor, at: offset, count: Int(chunk.size), into: &buffer)) == true
                            && buffer.withUnsafeReadableBytes({ Secrets.hex(SHA256.hash(data: $0)) }) == chunk.hash
                    }
                }
            }
            return await group.allSatisfy { $0 }
        }
    }

    /// Appends the `count` bytes at `offset` of a file open for reading to `buffer`; false when the file ends
    /// before them.
    static func bytes(of descriptor: Int32, at offset: Int64, count: Int, into buffer: inout ByteBuffer) throws -> Bool {
        try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { space in
            var done = 0
            while done < count {
                let read = pread(descriptor, space.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if read > 0 {
                    done += read
                } else if read == 0 {
                    break
                } else if errno != EINTR {
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
            }
            return done
        } == count
    }

    private static func open(_ file: URL) throws -> Int32 {
        let descriptor = Foundation.open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return descriptor
    }

    /// Reads up to the buffer's size; 0 at the end of the file.
    private static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let count = Foundation.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
    }
}
