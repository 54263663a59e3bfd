import Hummingbird
import NIOCore
import NimbusStore

extension BlobStore {
    /// A response body streaming a blob of `size` bytes (its size as just read from the store), piece by
    /// piece as the client takes them.
    func responseBody(_ id: String, size: Int64) -> ResponseBody {
        responseBody(id, range: nil, length: size)
    }

    /// A response body streaming the bytes at `range` of a blob (offsets checked against its size).
    func responseBody(_ id: String, range: ClosedRange<Int64>) -> ResponseBody {
        responseBody(id, range: range, length: Int64(range.count))
    }

    /// A blob swept between the size's reading and the stream (never one a live entry names) ends the
    /// response early, which the client sees as a body shorter than its length.
    private func responseBody(_ id: String, range: ClosedRange<Int64>?, length: Int64) -> ResponseBody {
        ResponseBody(contentLength: Int(length)) { writer in
            try await read(id, range: range) { piece in try await writer.write(piece) }
            try await writer.finish(nil)
        }
    }
}
