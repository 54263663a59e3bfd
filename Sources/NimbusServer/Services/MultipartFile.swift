import Foundation
import Hummingbird
import MultipartKit
import NimbusCore
import NIOCore

/// The file of a `multipart/form-data` upload, read out of the body as it streams in (browsers and
/// CloudKit JS send assets as a form with one file part), so that the asset holds the file and not the
/// form around it.
///
/// The file is the first part with a `filename`; in a form without one, the first part.
final class MultipartFile {
    enum Event {
        /// A part with a filename came after a first part without one: the bytes so far were not the file.
        case restart
        case bytes(ByteBuffer)
    }

    private let parser: MultipartParser
    private var events = [Event]()
    private var part = PartState()
    /// The file part's name as the browser sent it (`filename=` of its Content-Disposition).
    private(set) var filename: String?
    /// Which part is the file so far, and whether it had a filename.
    private var chosen: (index: Int, named: Bool, complete: Bool)?
    private var index = 0

    private struct PartState {
        var named = false
        var filename: String?
        var decided = false
        var writing = false
    }

    /// A reader for a body of `contentType`, or nil when it is not multipart.
    init?(contentType: String?) {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/") else { return nil }
        let parameters = contentType.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        guard
            let boundary = parameters.first(where: { $0.lowercased().hasPrefix("boundary=") }).map({ String($0.dropFirst(9)) })
                .map({ $0.hasPrefix("\"") && $0.hasSuffix("\"") && $0.count >= 2 ? String($0.dropFirst().dropLast()) : $0 }),
            (1...70).contains(boundary.utf8.count)
        else { return nil }
        parser = MultipartParser(boundary: boundary)
        parser.onHeader = { [unowned self] name, value in
            if name.lowercased() == "content-disposition", value.contains("filename=") {
                part.named = true
                part.filename = Self.filename(inDisposition: value)
            }
        }
        parser.onBody = { [unowned self] bytes in
            decide()
            if part.writing { events.append(.bytes(bytes)) }
        }
        parser.onPartComplete = { [unowned self] in
            decide()
            if part.writing { chosen?.complete = true }
            index += 1
            part = PartState()
        }
    }

    /// Whether the part whose headers have been read is the file.
    private func decide() {
        guard !part.decided else { return }
        part.decided = true
        if chosen == nil {
            chosen = (index, part.named, false)
            part.writing = true
            filename = part.filename
        } else if chosen?.named == false, part.named {
            chosen = (index, true, false)
            part.writing = true
            filename = part.filename
            events.append(.restart)
        }
    }

    /// `filename="…"` (or unquoted) of a Content-Disposition; browsers escape a quote in it as `%22`.
    static func filename(inDisposition value: String) -> String? {
        guard let range = value.range(of: "filename=") else { return nil }
        let rest = value[range.upperBound...]
        if rest.hasPrefix("\"") {
            return rest.dropFirst().split(separator: "\"", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        }
        return rest.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// What `chunk` adds to the file.
    func feed(_ chunk: ByteBuffer) throws -> [Event] {
        do {
            try parser.execute(chunk)
        } catch {
            throw NimbusError.badRequest("the multipart body is malformed")
        }
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    /// The whole file of a `multipart/form-data` body and its name, read into memory; at most `limit` bytes.
    static func collect(_ body: RequestBody, contentType: String?, limit: Int, tooLarge: @autoclosure () -> NimbusError)
        async throws -> (bytes: Data, filename: String?)
    {
        guard let multipart = MultipartFile(contentType: contentType) else {
            throw NimbusError.badRequest("send the file as multipart/form-data")
        }
        var bytes = Data()
        for try await buffer in body {
            for event in try multipart.feed(buffer) {
                switch event {
                case .restart: bytes.removeAll()
                case .bytes(let part): bytes.append(contentsOf: part.readableBytesView)
                }
            }
            guard bytes.count <= limit else { throw tooLarge() }
        }
        try multipart.finish()
        return (bytes, multipart.filename)
    }

    /// Checks that the file's part ended with its boundary, rather than with the body.
    func finish() throws {
        guard chosen?.complete == true else {
            throw NimbusError.badRequest("the multipart body ended before its file part was complete, or held no part")
        }
    }
}
