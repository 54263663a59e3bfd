import Crypto
import Foundation
import NIOCore
import NimbusCore

/// The chunks of a file this device already holds (an item's previous version, on disk), by hash: a new
/// version of the file is written from them where it can, so an edit in the middle of a large file
/// downloads the chunks that changed, not the whole file. The device's chunker is the one every device
/// uploads with, so unchanged stretches of a file cut into the same chunks on both sides.
///
/// Every chunk is read again and checked against its hash when it is taken (the file may have changed
/// since it was cut), so a wrong byte is never written; a chunk that no longer matches is downloaded.
final class LocalChunks: Sendable {
    private let file: FileHandle
    private let places: [String: (offset: UInt64, length: Int)]

    /// The chunks of `file` among `wanted` (all of them when nil); nil when the file cannot be read or holds
    /// none of them.
    init?(of file: URL, wanted: Set<String>?) async {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return nil }
        var places: [String: (offset: UInt64, length: Int)] = [:]
        var offset: UInt64 = 0
        let read = try? await FileContent.chunks(of: file) { bytes, hash in
            if wanted?.contains(hash) ?? true { places[hash] = (offset, bytes.count) }
            offset += UInt64(bytes.count)
        }
        guard read != nil, !places.isEmpty else {
            try? handle.close()
            return nil
        }
        self.file = handle
        self.places = places
    }

    deinit { try? file.close() }

    /// Whether the file held the chunk when it was cut.
    func holds(_ hash: String) -> Bool { places[hash] != nil }

    /// The chunk's bytes from the file, if it holds them still.
    func bytes(of hash: String) -> ByteBuffer? {
        guard let place = places[hash], let bytes = read(place),
            bytes.withUnsafeReadableBytes({ Secrets.hex(SHA256.hash(data: $0)) }) == hash
        else { return nil }
        return bytes
    }

    private func read(_ place: (offset: UInt64, length: Int)) -> ByteBuffer? {
        var bytes = ByteBufferAllocator().buffer(capacity: place.length)
        let count = bytes.writeWithUnsafeMutableBytes(minimumWritableBytes: place.length) { buffer in
            max(0, pread(file.fileDescriptor, buffer.baseAddress, place.length, off_t(place.offset)))
        }
        return count == place.length ? bytes : nil
    }
}
