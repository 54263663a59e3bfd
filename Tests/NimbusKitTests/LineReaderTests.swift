import Foundation
import Testing

@testable import NimbusKit

/// The control socket's lines: each whole, the last one without its newline too, and nothing past the limit.
@Suite struct LineReaderTests {
    /// A reader of `bytes`, sent from another thread and then the connection closed.
    func reader(of bytes: [UInt8], limit: Int = 1 << 30) -> LineReader {
        var pipe: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pipe) == 0)
        let sender = pipe[1]
        Thread.detachNewThread {
            _ = UnixSocket.send(Data(bytes), on: sender)
            close(sender)
        }
        return LineReader(pipe[0], limit: limit)
    }

    @Test func linesComeWholeAndTheLastWithoutItsNewline() {
        let lines = reader(of: Array("one\ntwo\n\nlast".utf8))
        #expect(lines.nextBytes() == Array("one".utf8))
        #expect(lines.nextLines(2).map { bytes, ranges in ranges.map { Array(bytes[$0]) } } == [Array("two".utf8), []])
        #expect(lines.nextBytes() == Array("last".utf8), "what is left when the connection ends")
        #expect(lines.nextBytes() == nil)
    }

    /// The sender's count of bytes only sizes the buffer: too small, too large or absurd, the same lines come,
    /// and what follows them is still there for the next read.
    @Test(arguments: [0, 3, 1 << 20, Int.max])
    func manyLinesWhateverTheirExpectedLength(expectedBytes: Int) {
        let rows = (0..<3000).map { "row \($0) " + String(repeating: "r", count: $0 % 200) }
        let lines = reader(of: Array((rows.joined(separator: "\n") + "\nafter\n").utf8))
        let read = lines.nextLines(rows.count, expectedBytes: expectedBytes)
        #expect(read.map { bytes, ranges in ranges.map { String(decoding: bytes[$0], as: UTF8.self) } } == rows)
        #expect(lines.nextBytes() == Array("after".utf8))
        #expect(lines.nextBytes() == nil)
    }

    @Test func manyLinesEndingEarlyAreNone() {
        let lines = reader(of: Array("a\nb\nc".utf8))
        #expect(lines.nextLines(3) == nil, "the third line never ended")
    }

    @Test func aLinePastTheLimitEndsTheReading() {
        let lines = reader(of: Array(repeating: UInt8(ascii: "x"), count: 5000) + [0x0A], limit: 1000)
        #expect(lines.nextBytes() == nil)
    }
}
