import Crypto
import Foundation

/// Many chunks in one body (`/blobs/1/…/upload` and `/fetch`), so that a thousand small files cost a
/// few requests and one sync on each side instead of a thousand. Each chunk is framed as its SHA-256
/// in 64 lowercase hexadecimal ASCII bytes, its size in 8 bytes big-endian, then its bytes.
package enum ChunkBundle {
    /// The most bytes of chunks in one bundle (its body is a little larger: 72 bytes a chunk).
    package static let maxBytes = 16 << 20
    /// The most chunks in one bundle.
    package static let maxChunks = 1_000
    static let headerBytes = 72
    /// The largest body a bundle can be.
    package static let maxBodyBytes = maxBytes + maxChunks * headerBytes

    package struct Chunk: Sendable, Equatable {
        package let hash: String
        package let bytes: Data
        /// Whether `hash` was computed from `bytes` here rather than claimed by a sender, so a blob store
        /// need not hash them again to check it.
        package let isHashed: Bool

        /// A chunk as a sender names it: its hash is checked before it is stored.
        package init(hash: String, bytes: Data) {
            self.hash = hash
            self.bytes = bytes
            isHashed = false
        }

        /// A chunk named by its own bytes' SHA-256.
        package init(hashing bytes: Data) {
            hash = Secrets.hex(SHA256.hash(data: bytes))
            self.bytes = bytes
            isHashed = true
        }

        package static func == (left: Chunk, right: Chunk) -> Bool { left.hash == right.hash && left.bytes == right.bytes }
    }

    /// The body's framing is broken: a reason a person can act on.
    package struct Malformed: Error, Equatable {
        package var reason: String
    }

    package static func encode(_ chunks: [Chunk]) -> Data {
        var body = Data(capacity: chunks.reduce(0) { $0 + headerBytes + $1.bytes.count })
        for chunk in chunks {
            body.append(contentsOf: Array(chunk.hash.utf8))
            withUnsafeBytes(of: UInt64(chunk.bytes.count).bigEndian) { body.append(contentsOf: $0) }
            body.append(chunk.bytes)
        }
        return body
    }

    /// The chunks of `body`, each named by a well-formed hash (whether the bytes hash to it is the
    /// reader's to check), within the bundle's limits.
    package static func decode(_ body: Data) throws -> [Chunk] {
        var chunks: [Chunk] = []
        var offset = body.startIndex
        while offset < body.endIndex {
            guard chunks.count < maxChunks else { throw Malformed(reason: "a bundle holds at most \(maxChunks) chunks") }
            guard body.endIndex - offset >= headerBytes else {
                throw Malformed(reason: "chunk \(chunks.count + 1)'s header is cut short")
            }
            let hash = String(decoding: body[offset..<offset + 64], as: UTF8.self)
            guard DocumentNames.isHash(hash) else {
                throw Malformed(reason: "chunk \(chunks.count + 1) is not named by a SHA-256 in lowercase hexadecimal")
            }
            let size = body[offset + 64..<offset + headerBytes].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let start = offset + headerBytes
            guard size <= UInt64(body.endIndex - start) else {
                throw Malformed(reason: "chunk \(chunks.count + 1) says it holds \(size) bytes; fewer follow")
            }
            chunks.append(Chunk(hash: hash, bytes: body[start..<start + Int(size)]))
            offset = start + Int(size)
        }
        return chunks
    }
}
