import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A TCP relay on a free loopback port in front of a server, which a test can make stall toward the server:
/// after `hold(after:)` it forwards that many more bytes from its clients, then holds the rest until
/// `release()`. A client in the middle of an upload is then stopped at a moment the test knows, rather
/// than one a race picks (answers from the server are always forwarded). Stopped when the test's resources
/// are cleaned up.
package final class HoldingRelay: Sendable {
    package let url: URL
    private let allowance = Allowance()
    private let listener: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>

    /// Starts a relay to the server listening on loopback port `port`.
    package static func start(to port: Int) async throws -> HoldingRelay {
        let relay = try await HoldingRelay(port: port)
        TestResources.current?.onCleanup { relay.stop() }
        return relay
    }

    private init(port: Int) async throws {
        listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                }
            }
        url = URL(string: "http://127.0.0.1:\(listener.channel.localAddress!.port!)")!
        let (listener, allowance) = (listener, allowance)
        Task {
            try? await listener.executeThenClose { clients in
                await withDiscardingTaskGroup { group in
                    do {
                        for try await client in clients {
                            group.addTask { await Self.relay(client, to: port, allowance: allowance) }
                        }
                    } catch {
                        // The listener failed or was closed: no more clients either way.
                    }
                    group.cancelAll()
                }
            }
        }
    }

    /// From now on, forwards `bytes` more toward the server and holds the rest.
    package func hold(after bytes: Int) { allowance.set(bytes) }

    /// Forwards everything held and everything after it.
    package func release() { allowance.set(nil) }

    /// Whether a client's bytes are being held now (the allowance is spent and more wait to go).
    package var isHolding: Bool { allowance.isHolding }

    private func stop() {
        release()
        listener.channel.close(promise: nil)
    }

    private static func relay(
        _ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, to port: Int, allowance: Allowance
    ) async {
        do {
            let server = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                    }
                }
            try await client.executeThenClose { fromClient, toClient in
                try await server.executeThenClose { fromServer, toServer in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for try await var buffer in fromClient {
                                while buffer.readableBytes > 0 {
                                    let granted = await allowance.take(upTo: buffer.readableBytes)
                                    try await toServer.write(buffer.readSlice(length: granted)!)
                                }
                            }
                            toServer.finish()
                        }
                        group.addTask {
                            for try await buffer in fromServer { try await toClient.write(buffer) }
                            toClient.finish()
                        }
                        // Either side ending with an error ends the other.
                        try await group.waitForAll()
                    }
                }
            }
        } catch {
            try? await client.channel.close()
        }
    }
}

/// How many more bytes may go toward the server (nil: no limit), and the writers waiting for more.
private final class Allowance: Sendable {
    private struct State {
        var remaining: Int?
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    var isHolding: Bool { state.withLock { $0.remaining == 0 && !$0.waiting.isEmpty } }

    func set(_ bytes: Int?) {
        let woken = state.withLock { state in
            state.remaining = bytes
            guard bytes != 0 else { return [CheckedContinuation<Void, Never>]() }
            defer { state.waiting = [] }
            return state.waiting
        }
        for writer in woken { writer.resume() }
    }

    /// How many of `wanted` bytes may go now (at least one), waiting while the allowance is spent.
    func take(upTo wanted: Int) async -> Int {
        while true {
            let granted = state.withLock { state -> Int? in
                guard let remaining = state.remaining else { return wanted }
                guard remaining > 0 else { return nil }
                state.remaining = remaining - min(remaining, wanted)
                return min(remaining, wanted)
            }
            if let granted { return granted }
            await withCheckedContinuation { continuation in
                let spent = state.withLock { state in
                    guard state.remaining == 0 else { return false }
                    state.waiting.append(continuation)
                    return true
                }
                if !spent { continuation.resume() }
            }
        }
    }
}
