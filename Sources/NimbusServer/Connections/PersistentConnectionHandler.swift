import NIOCore
import NIOHTTP1

/// Keeps a connection open after a response only when its request asked for that (RFC 9112 §9.3): HTTP/1.1
/// unless it says `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`. Hummingbird sees requests
/// as HTTPTypes, which carry no version, so on its own it kept every HTTP/1.0 connection open without saying
/// so, and clients that wait for the close (ApacheBench) waited forever.
///
/// Sits after the request decoder: it notes each request head, says in each response whether the
/// connection persists, and closes the connection once the response to a request that did not ask to persist
/// is written. It steps out of the pipeline when a request asks for a protocol upgrade (the push socket).
final class PersistentConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The requests not yet answered, oldest first (clients may pipeline them).
    private var unanswered: [HTTPRequestHead] = []
    /// Whether the connection persists after the response being written.
    private var persists = true

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            if head.headers.contains(name: "upgrade") {
                // WebSocket frames may follow this request.
                context.fireChannelRead(data)
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                return
            }
            unanswered.append(head)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response) where !unanswered.isEmpty:
            let request = unanswered[0]
            persists = request.isKeepAlive
            if request.version == .http1_0 {
                if !response.headers.contains(name: "content-length") {
                    // An HTTP/1.0 client reads no chunked coding: sent as HTTP/1.0, the body ends with the connection.
                    response.version = .http1_0
                    persists = false
                }
                response.headers.replaceOrAdd(name: "connection", value: persists ? "keep-alive" : "close")
            } else if !persists {
                response.headers.replaceOrAdd(name: "connection", value: "close")
            }
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .end where !unanswered.isEmpty:
            unanswered.removeFirst()
            guard !persists else {
                context.write(data, promise: promise)
                return
            }
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            if let promise { written.futureResult.cascade(to: promise) }
            context.write(data, promise: written)
        default:
            context.write(data, promise: promise)
        }
    }
}
