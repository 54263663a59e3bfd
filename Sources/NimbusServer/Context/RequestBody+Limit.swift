import Hummingbird
import NIOCore
import NimbusCore

extension RequestBody {
    /// How much of an oversized body is still read, and discarded, before the answer.
    static let drainLimit = 64 << 20

    /// The whole body if it holds at most `limit` bytes. A longer body is read on to its end (up to
    /// `drainLimit`) and discarded before `tooLarge` is thrown, so a client that sends its whole body
    /// before reading the answer receives it: Hummingbird reads past an unread body only to reach the
    /// next request, so on a connection the request asked to close, the client would block sending.
    func collect(upTo limit: Int, orThrow tooLarge: @autoclosure () -> any Error) async throws -> ByteBuffer {
        var collected = ByteBuffer()
        var length = 0
        for try await var chunk in self {
            length += chunk.readableBytes
            if length <= limit {
                collected.writeBuffer(&chunk)
            } else if length > Self.drainLimit {
                break
            } else {
                collected = ByteBuffer()
            }
        }
        guard length <= limit else { throw tooLarge() }
        return collected
    }
}
