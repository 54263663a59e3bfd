import Foundation
import Logging

/// Writes each log event as one line: text, `2026-11-22T10:00:00.000Z info nimbus: account=_… signed in`,
/// or, for log collectors, a JSON object,
/// `{"time":"…","level":"info","label":"nimbus","message":"signed in","account":"_…","device":"…"}`.
///
/// Metadata is rendered only when an event is logged (swift-log's `StreamLogHandler` renders it whenever
/// it changes, and the server sets a request id on every request's logger while most requests log
/// nothing). In JSON, metadata becomes top-level string fields (nested values rendered as text), and the
/// fixed fields win over metadata keys of the same name.
package struct LineLogHandler: LogHandler {
    package enum Format: Sendable { case text, json }

    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info
    private let label: String
    private let format: Format
    private let write: @Sendable (String) -> Void

    /// Logs to standard error, or to `write` (tests).
    package init(
        label: String, format: Format,
        write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) {
        self.label = label
        self.format = format
        self.write = write
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields = [String: String]()
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { fields[key] = "\(value)" }
        if let error = event.error { fields["error"] = "\(error)" }
        let time = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        switch format {
        case .text:
            let pairs = fields.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
            write("\(time) \(event.level) \(label):\(pairs) \(event.message)\n")
        case .json:
            fields["time"] = time
            fields["level"] = event.level.rawValue
            fields["label"] = label
            fields["message"] = event.message.description
            fields["source"] = event.source
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard let line = try? encoder.encode(fields) else { return }
            write(String(decoding: line, as: UTF8.self) + "\n")
        }
    }
}
