import Foundation
import Logging
import NimbusCore
import NimbusStore
import ServiceLifecycle

/// Carries push messages between the nodes that share a database: what one node publishes reaches the
/// devices connected to every other, through the backend's `NodeSignals` (PostgreSQL's LISTEN/NOTIFY).
///
/// A signal is a wake-up: a device that misses one catches up from its change tokens, as after any lost
/// push. A record notification too large for one signal crosses as its zone's `zoneMoved` alone.
final class PushRelay: Sendable, Service {
    private let signals: any NodeSignals
    private let push: PushHub
    private let logger: Logger
    /// This node, so it skips its own signals (its devices had the message already).
    private let node = UUID().uuidString

    private struct Signal: Codable {
        var node: String
        var accountID: String
        var message: PushMessage
    }

    init(signals: any NodeSignals, push: PushHub, logger: Logger) {
        self.signals = signals
        self.push = push
        self.logger = logger
    }

    /// Sends a message this node published to the other nodes.
    func relay(to accountID: String, _ message: PushMessage) {
        Task {
            var signal = Signal(node: node, accountID: accountID, message: message)
            var text = try String(decoding: JSONEncoder().encode(signal), as: UTF8.self)
            if text.utf8.count > signals.maximumSignalBytes, message.notification != nil {
                signal.message = PushMessage(type: .zoneMoved, zone: message.zone, sequence: message.sequence)
                text = try String(decoding: JSONEncoder().encode(signal), as: UTF8.self)
            }
            guard text.utf8.count <= signals.maximumSignalBytes else { return }
            do {
                try await signals.signal(text)
            } catch {
                logger.warning("could not tell the other nodes of a change", metadata: ["error": "\(error)"])
            }
        }
    }

    func run() async throws {
        let decoder = JSONDecoder()
        await cancelWhenGracefulShutdown {
            await self.signals.listen(listening: {}) { text in
                guard let signal = try? decoder.decode(Signal.self, from: Data(text.utf8)), signal.node != self.node else {
                    return
                }
                self.push.publish(to: signal.accountID, signal.message, relaying: false)
            }
        }
    }
}
