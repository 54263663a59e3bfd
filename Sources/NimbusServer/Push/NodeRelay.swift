import Foundation
import Logging
import NimbusCore
import NimbusStore
import ServiceLifecycle
import Synchronization

/// What the nodes that share a database tell each other, through the backend's `NodeSignals`
/// (PostgreSQL's LISTEN/NOTIFY): push messages, so a change made through one node reaches the devices
/// connected to every other, and that the cached schemas, subscriptions and roles changed.
///
/// Signals are wake-ups. A device that misses a push catches up from its change tokens, as after any lost
/// push; a node that may have missed an invalidation (its listening connection was lost) forgets every
/// cached registry when it listens again. A record notification too large for one signal crosses as its
/// zone's `zoneMoved` alone.
final class NodeRelay: Sendable, Service {
    private let signals: any NodeSignals
    private let logger: Logger
    /// This node, so it skips its own signals (it acted on them already).
    private let node = UUID().uuidString
    private let receivers = Mutex(Receivers())
    private let outbox = Mutex(Outbox())

    struct Receivers {
        var push: (@Sendable (String, PushMessage) -> Void)?
        var signedOut: (@Sendable (_ accountID: String, _ deviceID: String) -> Void)?
        var cachesChanged: (@Sendable () -> Void)?
    }

    private struct Signal: Codable {
        var node: String
        /// A push message for an account's devices, or the account's device signed out; neither: the
        /// registries' caches changed.
        var accountID: String?
        var message: PushMessage?
        var signedOutDevice: String?
    }

    init(signals: any NodeSignals, logger: Logger) {
        self.signals = signals
        self.logger = logger
    }

    /// Where the signals of other nodes go.
    func receive(
        push: @escaping @Sendable (String, PushMessage) -> Void,
        signedOut: @escaping @Sendable (_ accountID: String, _ deviceID: String) -> Void,
        cachesChanged: @escaping @Sendable () -> Void
    ) {
        receivers.withLock { $0 = Receivers(push: push, signedOut: signedOut, cachesChanged: cachesChanged) }
    }

    /// Sends a message this node published to the other nodes.
    func relay(to accountID: String, _ message: PushMessage) {
        var signal = Signal(node: node, accountID: accountID, message: message)
        if encoded(signal).utf8.count > signals.maximumSignalBytes, message.notification != nil {
            signal.message = PushMessage(type: .zoneMoved, zone: message.zone, sequence: message.sequence)
        }
        send(signal)
    }

    /// Tells the other nodes to close the push connections of a device signed out everywhere.
    func signedOut(_ accountID: String, deviceID: String) {
        send(Signal(node: node, accountID: accountID, signedOutDevice: deviceID))
    }

    /// Tells the other nodes to forget their cached schemas, subscriptions and roles.
    func cachesChanged() { send(Signal(node: node)) }

    private func encoded(_ signal: Signal) -> String {
        String(decoding: (try? JSONEncoder().encode(signal)) ?? Data(), as: UTF8.self)
    }

    private func send(_ signal: Signal) {
        let text = encoded(signal)
        guard text.utf8.count <= signals.maximumSignalBytes else { return }
        let startSending = outbox.withLock { outbox in
            outbox.pending.append(text)
            defer { outbox.sending = true }
            return !outbox.sending
        }
        if startSending { Task { await sendWaitingSignals() } }
    }

    /// Signals waiting to be sent, and whether a task is sending them.
    private struct Outbox {
        var pending = [String]()
        var sending = false
    }

    /// At most this many signals go in one statement.
    private static let signalsPerStatement = 100

    /// Sends the waiting signals in order, one statement at a time: those made while one statement is in
    /// flight go together in the next, so a busy node signals in a few statements rather than one each.
    private func sendWaitingSignals() async {
        while true {
            let batch = outbox.withLock { outbox in
                let batch = Array(outbox.pending.prefix(Self.signalsPerStatement))
                outbox.pending.removeFirst(batch.count)
                if batch.isEmpty { outbox.sending = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try await signals.signal(batch)
            } catch {
                logger.warning("could not signal the other nodes", metadata: ["error": "\(error)"])
            }
        }
    }

    func run() async throws {
        let decoder = JSONDecoder()
        await cancelWhenGracefulShutdown {
            await self.signals.listen(listening: { self.receivers.withLock { $0.cachesChanged }?() }) { text in
                guard let signal = try? decoder.decode(Signal.self, from: Data(text.utf8)), signal.node != self.node else {
                    return
                }
                let receivers = self.receivers.withLock { $0 }
                if let accountID = signal.accountID, let message = signal.message {
                    receivers.push?(accountID, message)
                } else if let accountID = signal.accountID, let deviceID = signal.signedOutDevice {
                    receivers.signedOut?(accountID, deviceID)
                } else {
                    receivers.cachesChanged?()
                }
            }
        }
    }
}
