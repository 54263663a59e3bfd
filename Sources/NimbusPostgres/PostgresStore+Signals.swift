import Foundation
import NimbusStore
import PostgresNIO

extension PostgresStore: NodeSignals {
    /// The channel every node listens on.
    static let signalChannel = "nimbus_signals"

    /// PostgreSQL's limit on a notification's payload is 8,000 bytes; a little is kept in reserve.
    package var maximumSignalBytes: Int { 7_900 }

    package func signal(_ text: String) async throws {
        try await rows("SELECT pg_notify(\(Self.signalChannel), \(text))")
    }

    /// Listens on one connection of the pool, held for as long as it listens; after a failure, waits a
    /// moment (up to 2 s) and listens again.
    package func listen(listening: @escaping @Sendable () -> Void, _ receive: @escaping @Sendable (String) -> Void) async {
        var pause = Duration.milliseconds(50)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.signalChannel) { notifications in
                        listening()
                        pause = .milliseconds(50)
                        for try await notification in notifications { receive(notification.payload) }
                    }
                }
            } catch {
                guard !Task.isCancelled else { return }
                Self.logger.warning("lost the connection that listens for other nodes' signals", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(2))
        }
    }
}
