import Foundation
import NimbusStore
import PostgresNIO
import Synchronization

extension PostgresStore: NodeSignals {
    /// The channel every node listens on.
    static let signalChannel = "nimbus_signals"

    /// PostgreSQL's limit on a notification's payload is 8,000 bytes; a little is kept in reserve.
    package var maximumSignalBytes: Int { 7_900 }

    package func signal(_ texts: [String]) async throws {
        try await rows("SELECT pg_notify(\(Self.signalChannel), t) FROM unnest(\(texts)::text[]) AS u(t)")
    }

    /// Listens on one connection of the pool, held for as long as it listens; after a failure (the
    /// connection closing among them), waits a moment (up to 2 s) and listens again.
    package func listen(listening: @escaping @Sendable () -> Void, _ receive: @escaping @Sendable (String) -> Void) async {
        let pause = Mutex(Duration.milliseconds(50))
        while !Task.isCancelled {
            do {
                try await leased(cancellable: true) { connection in
                    try await connection.listen(on: Self.signalChannel) { notifications in
                        listening()
                        pause.withLock { $0 = .milliseconds(50) }
                        for try await notification in notifications { receive(notification.payload) }
                    }
                }
            } catch {
                guard !Task.isCancelled else { return }
                Self.logger.warning("lost the connection that listens for other nodes' signals", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: pause.withLock { $0 })
            pause.withLock { $0 = min($0 * 2, .seconds(2)) }
        }
    }
}
