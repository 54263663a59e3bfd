import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// What one TCP connection to the test server carried, for what HTTP clients smooth over: a body sent
/// whole before the answer is read, a request left unfinished.
package struct RawExchange: Sendable {
    /// Everything the server sent before it ended the connection (or the time ran out).
    package var received: Data
    /// Whether the server took every byte sent; false if the write was still waiting on the server.
    package var sentAll: Bool
    /// Whether the server ended the connection within the time (closed or reset it).
    package var closedByServer: Bool

    package var text: String { String(decoding: received, as: UTF8.self) }
}

extension TestServer {
    /// Connects, writes `bytes` while reading what comes back, and returns once the server has taken every
    /// byte and ended the connection, or when `timeout` passes (the connection is then closed from here).
    /// `sent` is called once every byte is written.
    package func rawExchange(
        _ bytes: Data, timeout: Duration = .seconds(10), sent: @escaping @Sendable () -> Void = {}
    ) async throws -> RawExchange {
        try await rawExchange(
            pieces: stride(from: 0, to: bytes.count, by: 1 << 16).map { bytes[$0..<min($0 + (1 << 16), bytes.count)] },
            timeout: timeout,
            sent: sent)
    }

    /// `rawExchange` writing `pieces` one at a time, `pause` apart (a client that sends slowly), from the
    /// loopback address `localAddress` (any of 127.0.0.0/8, to stand for another client).
    package func rawExchange(
        pieces data: [Data], pause: Duration = .zero, from localAddress: String = "127.0.0.1", timeout: Duration = .seconds(10),
        sent: @escaping @Sendable () -> Void = {}
    ) async throws -> RawExchange {
        let pieces = data.map { ByteBuffer(bytes: $0) }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(to: try SocketAddress(ipAddress: localAddress, port: 0))
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let first = pieces.first { try channel.pipeline.syncOperations.addHandler(FirstPieceWriter(piece: first)) }
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                }
            }
        let state = ExchangeState()
        try await channel.executeThenClose { inbound, outbound in
            await withTaskGroup(of: Side.self) { group in
                group.addTask {
                    // In pieces, so a write waits (on the channel's writability) while the server reads nothing.
                    for piece in pieces.dropFirst() {
                        if pause > .zero { try? await Task.sleep(for: pause) }
                        guard (try? await outbound.write(piece)) != nil else { return .writer }
                    }
                    state.sentAll.store(true, ordering: .relaxed)
                    sent()
                    return .writer
                }
                group.addTask {
                    do {
                        for try await chunk in inbound {
                            state.received.withLock { $0.append(contentsOf: chunk.readableBytesView) }
                        }
                        // Closing from this side also ends the inbound stream.
                        if !state.closing.load(ordering: .relaxed) { state.closedByServer.store(true, ordering: .relaxed) }
                    } catch {
                        // A reset: the server closed with bytes of ours unread.
                        if !state.closing.load(ordering: .relaxed) { state.closedByServer.store(true, ordering: .relaxed) }
                    }
                    return .reader
                }
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    return .timer
                }
                // Until the server has ended the connection and taken every byte, or the time runs out;
                // closing the channel then ends a write still waiting on the server.
                var done = Set<Side>()
                while let side = await group.next(), side != .timer {
                    done.insert(side)
                    if done == [.reader, .writer] { break }
                }
                state.closing.store(true, ordering: .relaxed)
                try? await channel.channel.close()
                group.cancelAll()
            }
        }
        return RawExchange(
            received: state.received.withLock { $0 }, sentAll: state.sentAll.load(ordering: .relaxed),
            closedByServer: state.closedByServer.load(ordering: .relaxed))
    }
}

private enum Side { case writer, reader, timer }

private final class ExchangeState: Sendable {
    let sentAll = Atomic(false)
    let received = Mutex(Data())
    let closedByServer = Atomic(false)
    let closing = Atomic(false)
}

/// Writes the first piece as soon as the connection is up, from the event loop: on a busy machine a task
/// may wait long for a thread, and a server timing the connection from its start would see a silent client.
private final class FirstPieceWriter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let piece: ByteBuffer

    init(piece: ByteBuffer) {
        self.piece = piece
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(piece), promise: nil)
        context.fireChannelActive()
    }
}
