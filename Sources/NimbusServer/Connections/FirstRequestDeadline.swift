import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1

/// HTTP/1 with the push socket's WebSocket upgrade, where a new connection must send its first request's
/// head within `deadline`.
///
/// Hummingbird watches a connection (idle timeout, closing at graceful shutdown) only once a request's
/// head has arrived. Without this, a connection that sends nothing, or a head byte by byte, stays open for
/// ever and holds graceful shutdown open with it.
struct FirstRequestDeadlineChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let base: HTTP1WebSocketUpgradeChannel
    let deadline: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Behind the request decoder, which hands it whole heads, and before the upgrade handler, which
            // holds a head until it has decided between HTTP and WebSocket.
            let operations = channel.pipeline.syncOperations
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try operations.addHandler(FirstRequestDeadlineHandler(deadline: deadline), position: .after(decoder))
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
