import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1

/// HTTP/1 with the push socket's WebSocket upgrade, guarded against clients that hold connections
/// without sending requests: a client address has at most `limits.maxConnectionsPerAddress` connections
/// open (more are closed at once), a new connection must send its first request's head within
/// `limits.headTimeout`, later heads must arrive within it of their first byte, requests the decoder
/// cannot read are answered at once (`RequestHeadGuard`), and a connection persists after a response only
/// when its request asked it to (`PersistentConnectionHandler`).
struct GuardedHTTPChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    struct Limits: Sendable {
        var headTimeout: TimeAmount
        var maxRequestLineBytes: Int
        var maxConnectionsPerAddress: Int
    }

    let base: HTTP1WebSocketUpgradeChannel
    let limits: Limits
    let connections: ConnectionsPerAddress
    /// False behind TLS, where `NegotiatedHTTPChannel` admits the connection before its handshake.
    var admitsConnections = true

    /// Counts the connection against its address's limit until it closes; false when the address is at its limit.
    func admit(_ channel: any Channel) -> Bool {
        guard let address = channel.remoteAddress?.ipAddress else { return true }
        guard connections.admit(address, limit: limits.maxConnectionsPerAddress) else { return false }
        let connections = connections
        channel.closeFuture.whenComplete { _ in connections.release(address) }
        return true
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admitted = admitsConnections ? admit(channel) : true
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Around the request decoder: it hands whole heads on, and the upgrade handler behind holds a
            // head until it has decided between HTTP and WebSocket.
            let operations = channel.pipeline.syncOperations
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let state = RequestHeadState(maxRequestLineBytes: limits.maxRequestLineBytes, headTimeout: limits.headTimeout)
            try operations.addHandler(RequestLineGuard(state: state), position: .before(decoder))
            try operations.addHandler(MalformedRequestResponder(state: state), position: .after(decoder))
            try operations.addHandler(FirstRequestDeadlineHandler(deadline: limits.headTimeout), position: .after(decoder))
            try operations.addHandler(PersistentConnectionHandler(), position: .after(decoder))
            if !admitted { try operations.addHandler(RefusedConnectionHandler(), position: .first) }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// Closes its connection when the deadline passes, or the server starts shutting down, before a request
/// head has arrived; steps out of the pipeline once one has.
final class FirstRequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let deadline: TimeAmount
    private var timer: Scheduled<Void>?

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: deadline) { self.end(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let isHead = if case .head = unwrapInboundIn(data) { true } else { false }
        context.fireChannelRead(data)
        if isHead {
            // Hummingbird takes care of the connection from here.
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.fireUserInboundEventTriggered(event)
        if event is ChannelShouldQuiesceEvent {
            // No request has begun on this connection, so nothing is lost by ending it.
            end(context)
        }
    }

    private func end(_ context: ChannelHandlerContext) {
        // Told as the client having stopped sending, the upgrade handler behind ends the connection quietly;
        // a channel closed under it fails its negotiation with an error Hummingbird logs as one.
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        context.close(promise: nil)
    }
}

/// Ends a connection as soon as it is up, before it can send anything: its address has too many open.
final class RefusedConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        // Told as the client having stopped sending, the upgrade handler ends the connection quietly.
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
