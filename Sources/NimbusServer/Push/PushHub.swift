import Foundation
import NimbusCore
import Synchronization

/// Fans "zone moved" messages out to the connected devices of an account.
///
/// Each connection gets a bounded buffer that keeps the newest messages: a device that falls that
/// far behind loses only hints, never data, because it catches up from its change tokens.
final class PushHub: Sendable {
    private let connections = Mutex<[String: [UUID: Connection]]>([:])
    static let bufferSize = 256
    /// Web clients' mailboxes, which get the notifications too.
    let courier = WebCourier()
    /// Where messages go for the devices connected to other nodes, when nodes share a database.
    private let relay = Mutex<Relay?>(nil)

    private struct Connection {
        let deviceID: String
        let continuation: AsyncStream<PushMessage>.Continuation
    }

    /// The relay's functions, in a struct of their own. A bare function type as a `Mutex`'s value is
    /// converted in and out of its generic form each time `withLock` hands it over (an inout reabstraction
    /// with writeback), and each conversion wraps the stored closure in one more thunk: read for every
    /// message, it grew two frames deeper per message, each publish slower than the last until the stack
    /// overflowed. A struct's stored function is never converted.
    struct Relay: Sendable {
        /// Sends an account's message to the other nodes.
        let send: @Sendable (String, PushMessage) -> Void
        /// Tells the other nodes that an account's device was signed out everywhere.
        let signedOut: @Sendable (_ accountID: String, _ deviceID: String) -> Void
    }

    /// Sends every message published, and every device signed out, from now on to the other nodes too.
    func relay(through relay: Relay) { self.relay.withLock { $0 = relay } }

    /// Registers a device connection; the stream ends when `disconnect` is called with the returned id, or
    /// when the device is signed out.
    func connect(accountID: String, deviceID: String) -> (id: UUID, messages: AsyncStream<PushMessage>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(
            of: PushMessage.self, bufferingPolicy: .bufferingNewest(Self.bufferSize))
        connections.withLock { $0[accountID, default: [:]][id] = Connection(deviceID: deviceID, continuation: continuation) }
        return (id, stream)
    }

    func disconnect(accountID: String, id: UUID) {
        let connection = connections.withLock { connections in
            let connection = connections[accountID]?.removeValue(forKey: id)
            if connections[accountID]?.isEmpty == true { connections[accountID] = nil }
            return connection
        }
        connection?.continuation.finish()
    }

    /// Ends the push connections of a device whose sessions were revoked, on this node and, unless another
    /// node said so, on the others: a signed-out device must stop hearing about its account's changes at
    /// once, not when its socket next reconnects.
    func disconnect(deviceID: String, of accountID: String, relaying: Bool = true) {
        let ended = connections.withLock { connections in
            let ended = (connections[accountID] ?? [:]).filter { $0.value.deviceID == deviceID }
            for id in ended.keys { connections[accountID]?.removeValue(forKey: id) }
            if connections[accountID]?.isEmpty == true { connections[accountID] = nil }
            return ended.values
        }
        for connection in ended { connection.continuation.finish() }
        if relaying, let relay = relay.withLock({ $0 }) { relay.signedOut(accountID, deviceID) }
    }

    /// Gives the message to the account's devices on this node and, unless it came from another node,
    /// to the other nodes. A chunk announcement skips the device that made it.
    func publish(to accountID: String, _ message: PushMessage, relaying: Bool = true) {
        let targets = connections.withLock { Array(($0[accountID] ?? [:]).values) }
        let announcer = message.announcement?.device
        for connection in targets where connection.deviceID != announcer { connection.continuation.yield(message) }
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
        for connection in all { connection.continuation.finish() }
    }
}
