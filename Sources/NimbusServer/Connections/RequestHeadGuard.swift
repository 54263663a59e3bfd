import Foundation
import NIOCore
import NIOHTTP1
import NimbusCore

/// Answers requests the HTTP decoder cannot read (a stray byte in the request line, headers too large or
/// too many) and URLs longer than the server reads, at once and with a status that says which, then
/// closes the connection; and closes one whose next request head takes longer than `headTimeout` to
/// arrive (a client that sends it a byte at a time). Without it such connections got no answer and sat
/// until the idle timeout.
///
/// Two handlers share one state: `RequestLineGuard` sits before the decoder and measures request lines
/// and head times in raw bytes; `MalformedRequestResponder` sits after it, sees where requests begin and
/// end and which responses are under way, and answers. Both step out of the pipeline when a request asks
/// for a protocol upgrade (the push socket), since WebSocket frames follow on an upgraded connection.
final class RequestHeadState {
    let maxRequestLineBytes: Int
    let headTimeout: TimeAmount
    /// Between requests: the next bytes begin a request line (unknown for a request pipelined behind
    /// another in the same read, whose line the decoder's own limit then bounds).
    var awaitingHead = true
    var requestLineBytes = 0
    var inRequestLine = true
    var headTimer: Scheduled<Void>?
    /// The head took too long and the connection is being closed: nothing more is answered.
    var timedOut = false
    weak var lineGuard: RequestLineGuard?

    init(maxRequestLineBytes: Int, headTimeout: TimeAmount) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.headTimeout = headTimeout
    }
}

/// The request line was longer than `maxRequestLineBytes` (its URL, almost all of it).
struct RequestLineTooLong: Error {}

final class RequestLineGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let state: RequestHeadState
    private var refused = false

    init(state: RequestHeadState) {
        self.state = state
    }

    func handlerAdded(context: ChannelHandlerContext) { state.lineGuard = self }

    func handlerRemoved(context: ChannelHandlerContext) {
        state.headTimer?.cancel()
        state.headTimer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let bytes = unwrapInboundIn(data)
        // The first request's head is timed from the connection's start (`FirstRequestDeadlineHandler`);
        // later ones from their first byte.
        if state.awaitingHead, state.headTimer == nil, bytes.readableBytes > 0 {
            state.headTimer = context.eventLoop.assumeIsolated().scheduleTask(in: state.headTimeout) { [state] in
                state.timedOut = true
                context.close(promise: nil)
            }
        }
        if state.inRequestLine {
            if let end = bytes.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                state.requestLineBytes += end - bytes.readerIndex
                state.inRequestLine = false
            } else {
                state.requestLineBytes += bytes.readableBytes
            }
            if state.requestLineBytes > state.maxRequestLineBytes {
                refused = true
                context.fireErrorCaught(RequestLineTooLong())
                return
            }
        }
        context.fireChannelRead(data)
    }
}

final class MalformedRequestResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: RequestHeadState
    /// Requests whose responses have not ended: while one is under way, a malformed request behind it can
    /// only close the connection, since an answer would land inside that response.
    private var unanswered = 0
    private var answered = false

    init(state: RequestHeadState) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            unanswered += 1
            state.awaitingHead = false
            state.headTimer?.cancel()
            state.headTimer = nil
            if head.headers.contains(name: "upgrade") {
                // WebSocket frames may follow this request: step aside, with the guard before the decoder.
                let operations = context.pipeline.syncOperations
                if let lineGuard = state.lineGuard { operations.removeHandler(lineGuard, promise: nil) }
                context.fireChannelRead(data)
                operations.removeHandler(context: context, promise: nil)
                return
            }
        case .end:
            state.awaitingHead = true
            state.inRequestLine = true
            state.requestLineBytes = 0
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { unanswered -= 1 }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let answer: NimbusError
        switch error {
        case is RequestLineTooLong:
            answer = NimbusError(.uriTooLong, "the request's URL is longer than \(state.maxRequestLineBytes) bytes")
        case HTTPParserError.headerOverflow:
            answer = NimbusError(
                .headersTooLarge, "the request's headers are too large or too many (at most 80 KB and 1,000 headers)")
        case is HTTPParserError:
            answer = .badRequest("the request is not valid HTTP/1.1")
        default:
            context.fireErrorCaught(error)
            return
        }
        guard !answered, !state.timedOut else { return }
        answered = true
        guard unanswered == 0 else {
            context.close(promise: nil)
            return
        }
        let body = (try? JSONEncoder().encode(answer)) ?? Data()
        var head = HTTPResponseHead(
            version: .http1_1,
            status: .custom(code: UInt(answer.code.httpStatus), reasonPhrase: Self.reason(answer.code.httpStatus)))
        head.headers = [
            "Content-Type": "application/json; charset=utf-8", "Content-Length": String(body.count), "Connection": "close",
        ]
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            context.close(promise: nil)
        }
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 414: "URI Too Long"
        case 431: "Request Header Fields Too Large"
        default: "Bad Request"
        }
    }
}
