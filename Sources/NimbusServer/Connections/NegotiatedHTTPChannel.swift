import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOHTTP2
import NIOSSL
import NIOTLS

/// HTTPS: TLS, then the protocol the client offers (ALPN). HTTP/2 to clients that offer `h2`; HTTP/1.1 to
/// the others through the guarded channel, with its WebSocket upgrade (WebSocket clients, push among them,
/// speak HTTP/1.1).
struct NegotiatedHTTPChannel: ServerChildChannel {
    typealias Negotiated = NIONegotiatedHTTPVersion<GuardedHTTPChannel.Value, HTTP2Channel.Value>

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    /// Offers `h2` and `http/1.1`; its certificate is replaced per handshake (`ServerCertificates`).
    let context: NIOSSLContext
    let http1: GuardedHTTPChannel
    let http2: HTTP2Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        // Counted per address before the handshake, whichever protocol follows (the guard behind does not
        // count again); one over its address's limit is closed at once.
        guard http1.admit(channel) else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.inputClosed)
        }
        return channel.eventLoop.makeCompletedFuture {
            let operations = channel.pipeline.syncOperations
            try operations.addHandler(NIOSSLServerHandler(context: context))
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                switch result {
                case .negotiated("h2"):
                    return http2.setup(channel: channel, logger: logger).map { .http2($0) }
                case .negotiated("http/1.1"), .fallback:
                    return http1.setup(channel: channel, logger: logger).map { .http1_1($0) }
                case .negotiated:
                    return channel.close().flatMap { channel.eventLoop.makeFailedFuture(NIOHTTP2Errors.invalidALPNToken()) }
                }
            }
            try operations.addHandler(negotiation)
            // The HTTP/1.1 guard's head deadline starts once a protocol is agreed; until then this one
            // ends a connection whose handshake never finishes.
            let deadline = channel.eventLoop.scheduleTask(in: http1.limits.headTimeout) { channel.close(promise: nil) }
            negotiation.protocolNegotiationResult.whenComplete { _ in deadline.cancel() }
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1_1(let connection): await http1.handle(value: connection, logger: logger)
            case .http2(let connection): await http2.handle(value: connection, logger: logger)
            }
        } catch {
            // A handshake the client gave up on, or a connection refused: nothing was asked.
            logger.debug("a TLS connection ended before a protocol was agreed", metadata: ["error": "\(error)"])
        }
    }
}
