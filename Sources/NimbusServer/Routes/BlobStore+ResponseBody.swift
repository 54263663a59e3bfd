import Hummingbird
import NIOCore
import NimbusStore

extension BlobStore {
    /// A response body of a blob of `size` bytes (its size as just read from the store).
    func responseBody(_ id: String, size: Int64) async throws -> ResponseBody {
        try await responseBody(id, range: nil, length: size)
    }

    /// A response body of the bytes at `range` of a blob (offsets checked against its size).
    func responseBody(_ id: String, range: ClosedRange<Int64>) async throws -> ResponseBody {
        try await responseBody(id, range: range, length: Int64(range.count))
    }

    /// Bodies up to this size are read whole before the response is made: a response commits to its status
    /// before its body, so a store that fails under a body already under way can only cut it short, while one
    /// that fails before it is answered `TRY_AGAIN_LATER` (an object store just back, say: SeaweedFS answered
    /// size requests a few seconds before it served the bytes). Larger bodies stream, holding little at a time.
    static var bodiesReadBeforeAnswering: Int64 { 1 << 20 }

    /// A blob swept between the size's reading and the body (never one a live entry names) is a missing blob
    /// when read first, and otherwise ends the response early, which the client sees as a body shorter than
    /// its length.
    private func responseBody(_ id: String, range: ClosedRange<Int64>?, length: Int64) async throws -> ResponseBody {
        guard length <= Self.bodiesReadBeforeAnswering else {
            return ResponseBody(contentLength: Int(length)) { writer in
                try await read(id, range: range) { piece in try await writer.write(piece) }
                try await writer.finish(nil)
            }
        }
        var body = ByteBuffer()
        try await read(id, range: range) { piece in
            if body.readableBytes == 0 { body = piece } else { body.writeImmutableBuffer(piece) }
        }
        guard body.readableBytes == length else { throw StoreError.missing("blob \(id.prefix(80))") }
        return ResponseBody(byteBuffer: body)
    }
}
