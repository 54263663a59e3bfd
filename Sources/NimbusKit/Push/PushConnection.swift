import Foundation
import HTTPTypes
import Logging
import NimbusCore
import Synchronization
import WSClient

/// Keeps a device's push socket (`/push/1`) open, reconnecting with backoff when it drops.
///
/// `onConnect` runs after every (re)connection, once the server says the socket is registered, so the
/// owner catches up on what it missed while away and misses nothing after; `onMessage` runs for every
/// other message.
package final class PushConnection: Sendable {
    private let session: NimbusSession
    private let logger: Logger
    private let onConnect: @Sendable () -> Void
    private let onMessage: @Sendable (PushMessage) -> Void
    private let outbound = Mutex<WebSocketOutboundWriter?>(nil)
    private let ready = Mutex(false)
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let connectedSinceLastAttempt = Mutex(false)

    package init(
        session: NimbusSession, logger: Logger, onConnect: @escaping @Sendable () -> Void,
        onMessage: @escaping @Sendable (PushMessage) -> Void
    ) {
        self.session = session
        self.logger = logger
        self.onConnect = onConnect
        self.onMessage = onMessage
    }

    /// Whether the server has registered the socket: messages published from now on arrive.
    package var isConnected: Bool { ready.withLock { $0 } }

    package func start() {
        task.withLock { task in
            guard task == nil else { return }
            task = Task { await self.maintain() }
        }
    }

    package func stop() {
        task.withLock { $0 }?.cancel()
    }

    /// Sends a message if connected; acknowledgements are best effort (the next one supersedes it).
    func send(_ message: PushMessage) async {
        guard let writer = outbound.withLock({ $0 }), let data = try? JSONEncoder().encode(message) else { return }
        try? await writer.write(.text(String(decoding: data, as: UTF8.self)))
    }

    private var url: String {
        var components = URLComponents(url: session.server, resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = "/push/1"
        return components.string!
    }

    private func maintain() async {
        var backoff = Duration.milliseconds(100)
        while !Task.isCancelled {
            var configuration = WebSocketClientConfiguration()
            configuration.additionalHeaders = [.authorization: "Bearer \(session.sessionToken)"]
            configuration.autoPing = .enabled(timePeriod: .seconds(30))
            do {
                try await WebSocketClient.connect(
                    url: url, configuration: configuration, tlsConfiguration: session.trust.tlsConfiguration, logger: logger
                ) {
                    inbound, outbound, _ in
                    self.outbound.withLock { $0 = outbound }
                    defer {
                        self.ready.withLock { $0 = false }
                        self.outbound.withLock { $0 = nil }
                    }
                    self.connectedSinceLastAttempt.withLock { $0 = true }
                    let decoder = JSONDecoder()
                    for try await message in inbound.messages(maxSize: 1 << 16) {
                        guard case .text(let text) = message,
                            let push = try? decoder.decode(PushMessage.self, from: Data(text.utf8))
                        else {
                            continue
                        }
                        if push.type == .connected {
                            self.ready.withLock { $0 = true }
                            self.onConnect()
                        } else {
                            self.onMessage(push)
                        }
                    }
                }
            } catch {
                logger.debug("push connection failed", metadata: ["error": "\(error)"])
            }
            if connectedSinceLastAttempt.withLock({ connected in
                defer { connected = false }; return connected
            }) {
                backoff = .milliseconds(100)
            }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(10))
        }
    }
}
