import Foundation
import Logging

/// Writes each log event as one JSON object per line, for log collectors:
/// `{"time":"…","level":"info","label":"nimbus","message":"signed in","account":"_…","device":"…"}`.
///
/// Metadata becomes top-level string fields (nested values are rendered as text); the fixed fields
/// win over metadata keys of the same name.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let label: String
    private let write: @Sendable (String) -> Void

    /// Logs to standard error, or to `write` (tests).
    public init(label: String, write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = [String: String]()
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { fields[key] = "\(value)" }
        fields["time"] = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = event.message.description
        fields["source"] = event.source
        if let error = event.error { fields["error"] = "\(error)" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let line = try? encoder.encode(fields) else { return }
        write(String(decoding: line, as: UTF8.self) + "\n")
    }
}
