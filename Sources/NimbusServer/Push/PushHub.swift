import Foundation
import NimbusCore
import Synchronization

/// Fans "zone moved" messages out to the connected devices of an account.
///
/// Each connection gets a bounded buffer that keeps the newest messages: a device that falls that
/// far behind loses only hints, never data, because it catches up from its change tokens.
final class PushHub: Sendable {
    private let connections = Mutex<[String: [UUID: AsyncStream<PushMessage>.Continuation]]>([:])
    static let bufferSize = 256
    /// Web clients' mailboxes, which get the notifications too.
    let courier = WebCourier()
    /// Where messages go for the devices connected to other nodes, when nodes share a database.
    private let relay = Mutex<Relay?>(nil)

    /// The relay's function, wrapped in a struct of its own. A bare function type as a `Mutex`'s value is
    /// converted in and out of its generic form each time `withLock` hands it over (an inout reabstraction
    /// with writeback), and each conversion wraps the stored closure in one more thunk: read for every
    /// message, it grew two frames deeper per message, each publish slower than the last until the stack
    /// overflowed. A struct's stored function is never converted.
    private struct Relay: Sendable {
        let send: @Sendable (String, PushMessage) -> Void
    }

    /// Sends every message published from now on to the other nodes too.
    func relay(through send: @escaping @Sendable (String, PushMessage) -> Void) { relay.withLock { $0 = Relay(send: send) } }

    /// Registers a device connection; the stream ends when `disconnect` is called with the returned id.
    func connect(accountID: String) -> (id: UUID, messages: AsyncStream<PushMessage>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(
            of: PushMessage.self, bufferingPolicy: .bufferingNewest(Self.bufferSize))
        connections.withLock { $0[accountID, default: [:]][id] = continuation }
        return (id, stream)
    }

    func disconnect(accountID: String, id: UUID) {
        let continuation = connections.withLock { connections in
            let continuation = connections[accountID]?.removeValue(forKey: id)
            if connections[accountID]?.isEmpty == true { connections[accountID] = nil }
            return continuation
        }
        continuation?.finish()
    }

    /// Gives the message to the account's devices on this node and, unless it came from another node,
    /// to the other nodes.
    func publish(to accountID: String, _ message: PushMessage, relaying: Bool = true) {
        let targets = connections.withLock { Array(($0[accountID] ?? [:]).values) }
        for continuation in targets { continuation.yield(message) }
        if let notification = message.notification { courier.deliver(to: accountID, notification) }
        if relaying, let relay = relay.withLock({ $0 }) { relay.send(accountID, message) }
    }

    var connectionCount: Int { connections.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    /// Ends every connection's stream, so push handlers close their sockets on shutdown.
    func disconnectAll() {
        let all = connections.withLock { connections in
            defer { connections = [:] }
            return connections.values.flatMap(\.values)
        }
        for continuation in all { continuation.finish() }
    }
}
