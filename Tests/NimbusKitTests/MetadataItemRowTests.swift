import Foundation
import Testing

@testable import NimbusKit

/// A query's items travel as tab-separated rows: every field, and text with tabs, newlines and backslashes,
/// comes back as it went.
@Suite struct MetadataItemRowTests {
    @Test func anItemSurvivesItsRow() throws {
        let items = [
            MetadataItem(
                id: "abc", path: "/r/Mobile Documents/x/Documents/Tab\there\\back\nline.txt", isDirectory: false,
                size: 1_234_567_890_123, creationDate: Date(timeIntervalSince1970: 1_700_000_000.123),
                modificationDate: Date(timeIntervalSince1970: 1_700_000_001.5), downloadingStatus: .downloaded,
                isDownloading: true, isUploading: false, isUploaded: true, percentDownloaded: 42.5, percentUploaded: nil,
                downloadingError: nil, uploadingError: "over quota:\tfull", hasUnresolvedConflicts: true),
            MetadataItem(
                id: "folder", path: "/r/Documents", isDirectory: true, size: 0, creationDate: nil, modificationDate: nil,
                downloadingStatus: .current, isUploaded: false, hasUnresolvedConflicts: false),
        ]
        for item in items {
            var bytes: [UInt8] = []
            item.appendRow(to: &bytes)
            #expect(!bytes.contains(0x0A), "one line")
            #expect(MetadataItem(row: bytes[...]) == item)
        }
        #expect(MetadataItem(row: Array("too\tfew".utf8)[...]) == nil)
        #expect(MetadataItem(row: Array("a\tb\t0\tnot a number\t\t\t2\t0\t0\t1\t\t\t\t\t0".utf8)[...]) == nil)
    }

    /// Dates and percentages come back as the very same numbers, whichever way their text was written.
    @Test func numbersReadBackExactly() {
        var random = SystemRandomNumberGenerator()
        var values: [Double] = [0, 100, 42.5, -1.5, 0.1, 1e-9, 1e300, -0.001, 9e15 / 1000, 1_700_000_000.999]
        for _ in 0..<20_000 {
            let milliseconds = Int64.random(in: 0..<4_000_000_000_000, using: &random)
            values.append(Double(milliseconds) / 1000)
            values.append(Double(milliseconds * 1_000_000 + Int64.random(in: 0..<1_000_000, using: &random)) / 1e9)
            values.append(Double.random(in: 0...100, using: &random))
        }
        for value in values {
            var bytes: [UInt8] = []
            MetadataItem.appendNumber(value, to: &bytes)
            #expect(Double(String(decoding: bytes, as: UTF8.self))?.bitPattern == value.bitPattern, "\(value)")
        }
    }

    @Test func anAnswerWithItemsReadsBackWhole() throws {
        let item = MetadataItem(
            id: "i", path: "/p/a.txt", isDirectory: false, size: 3, creationDate: nil, modificationDate: nil,
            downloadingStatus: .notDownloaded, isUploaded: true, hasUnresolvedConflicts: false)
        let pieces = try ControlResponse(items: [item, item]).pieces()
        var pipe: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pipe) == 0)
        defer { close(pipe[0]) }
        #expect(pieces.allSatisfy { UnixSocket.send($0, on: pipe[1]) })
        close(pipe[1])
        let read = try ControlResponse.read(from: LineReader(pipe[0]))
        #expect(read?.items == [item, item] && read?.itemRows == nil && read?.itemBytes == nil)
    }

    /// Many rows, more than the reader's buffer takes at once, then another answer on the same connection:
    /// each comes back whole and in order.
    @Test func manyRowsAndTheAnswerAfterThemReadBack() throws {
        let items = (0..<20_000).map { index in
            MetadataItem(
                id: "item-\(index)", path: "/r/Documents/Folder \(index % 97)/f\(index)\(index % 5 == 0 ? "\ttab" : "").txt",
                isDirectory: false, size: Int64(index), creationDate: Date(timeIntervalSince1970: 1_700_000_000.125),
                modificationDate: nil, downloadingStatus: .current, isUploaded: true, hasUnresolvedConflicts: false)
        }
        // Sent as the daemon sends an answer: piece after piece.
        let pieces = try ControlResponse(items: items).pieces() + ControlResponse(error: "after the rows").pieces()
        var pipe: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pipe) == 0)
        defer { close(pipe[0]) }
        let sender = pipe[1]
        Thread.detachNewThread {
            for piece in pieces { _ = UnixSocket.send(piece, on: sender) }
            close(sender)
        }
        let lines = LineReader(pipe[0])
        #expect(try ControlResponse.read(from: lines)?.items == items)
        #expect(try ControlResponse.read(from: lines)?.error == "after the rows")
        #expect(try ControlResponse.read(from: lines) == nil, "and nothing after")
    }
}
