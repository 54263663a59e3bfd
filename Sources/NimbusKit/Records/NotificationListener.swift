import Logging
import NimbusCore

/// Subscription notifications of one container as they arrive; stop it when done.
public final class NotificationListener: Sendable {
    public let notifications: AsyncStream<RecordNotification>
    private let continuation: AsyncStream<RecordNotification>.Continuation
    private let connection: PushConnection

    init(session: NimbusSession, container: String, environment: String) {
        (notifications, continuation) = AsyncStream.makeStream(of: RecordNotification.self)
        let continuation = continuation
        connection = PushConnection(
            session: session, logger: Logger(label: "nimbus.notifications"), onConnect: {},
            onMessage: { message in
                guard message.type == .notification, let notification = message.notification,
                    notification.containerIdentifier == container, notification.environment == environment
                else { return }
                continuation.yield(notification)
            })
        connection.start()
    }

    /// Whether the push socket is open, so notifications can arrive.
    public var isConnected: Bool { connection.isConnected }

    /// Closes the socket and ends `notifications`.
    public func stop() {
        connection.stop()
        continuation.finish()
    }

    deinit { stop() }
}
