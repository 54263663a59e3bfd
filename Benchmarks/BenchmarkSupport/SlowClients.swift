import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Hostile clients: connections that send a request head a byte every `interval` and never finish it,
/// opened again as soon as the server closes them, from several loopback addresses (each address is
/// held to the server's per-address limit), so that `count` of them stay open as long as this runs.
package final class SlowClients: Sendable {
    private let opened = Atomic(0)
    private let open = Atomic(0)
    private let stopping = Atomic(false)
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    package init() {}

    /// Connections opened so far, and open now.
    package var counts: (opened: Int, open: Int) { (opened.load(ordering: .relaxed), open.load(ordering: .relaxed)) }

    /// Opens `count` connections spread over `addresses` (127.0.0.x) and keeps them open until `stop()`.
    package func start(port: Int, count: Int, addresses: [String], interval: TimeAmount) async throws {
        for index in 0..<count {
            try await connect(port: port, address: addresses[index % addresses.count], interval: interval)
        }
    }

    private func connect(port: Int, address: String, interval: TimeAmount) async throws {
        guard !stopping.load(ordering: .relaxed) else { return }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(to: try SocketAddress(ipAddress: address, port: 0))
            .connect(host: "127.0.0.1", port: port).get()
        opened.add(1, ordering: .relaxed)
        open.add(1, ordering: .relaxed)
        channels.withLock { $0[ObjectIdentifier(channel)] = channel }
        channel.writeAndFlush(ByteBuffer(string: "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "), promise: nil)
        let trickle = channel.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            channel.writeAndFlush(ByteBuffer(string: "a"), promise: nil)
        }
        channel.closeFuture.whenComplete { _ in
            trickle.cancel()
            self.open.add(-1, ordering: .relaxed)
            self.channels.withLock { $0[ObjectIdentifier(channel)] = nil }
            Task { try? await self.connect(port: port, address: address, interval: interval) }
        }
    }

    package func stop() async {
        stopping.store(true, ordering: .relaxed)
        let all = channels.withLock { Array($0.values) }
        for channel in all { try? await channel.close() }
    }
}
