import Logging
import Synchronization

/// Keeps what is logged through it, each line its message and then its metadata (`key=value`, sorted), for
/// tests of what a server tells its operator.
package final class LogCapture: LogHandler, Sendable {
    private let lines = Mutex<[String]>([])

    package init() {}

    package var messages: [String] { lines.withLock { $0 } }

    /// A logger writing here.
    package var logger: Logger { Logger(label: "test") { _ in self } }

    package var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }

    package var logLevel: Logger.Level {
        get { .trace }
        set {}
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    package func log(event: LogEvent) {
        let metadata = (event.metadata ?? [:]).map { "\($0)=\($1)" }.sorted().joined(separator: " ")
        lines.withLock { $0.append(metadata.isEmpty ? "\(event.message)" : "\(event.message) \(metadata)") }
    }
}
