import Foundation
import Hummingbird
import HummingbirdWebSocket
import NimbusCore
import NimbusStore

/// `GET /push/1`: the WebSocket a signed-in device keeps open to hear that its zones moved.
struct PushRoutes {
    let server: ServerState

    /// On the HTTP router: a `GET /push/1` that did not ask for a WebSocket is told to.
    static func registerUpgradeRequired(on router: Router<AppRequestContext>) {
        router.get("/push/1") { _, _ -> Response in
            throw NimbusError(
                .upgradeRequired, "/push/1 is a WebSocket: send the request with `Connection: Upgrade` and `Upgrade: websocket`")
        }
    }

    func register(on router: Router<AppRequestContext>) {
        router.ws("/push/1") { request, context in
            _ = try context.credentials.requireSession()
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            guard case .success(let session) = context.requestContext.credentials.session else { return }
            try await handle(session: session, inbound: inbound, outbound: outbound)
        }
    }

    private func handle(session: AuthenticatedSession, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter)
        async throws
    {
        let (id, messages) = server.push.connect(accountID: session.accountID, deviceID: session.deviceID)
        defer { server.push.disconnect(accountID: session.accountID, id: id) }
        // Registered with the hub: tell the device, which catches up from here without a gap.
        let connected = try JSONEncoder().encode(PushMessage(type: .connected, zone: nil, sequence: 0))
        try await outbound.write(.text(String(decoding: connected, as: UTF8.self)))
        try? await server.store.markDeviceSeen(id: session.deviceID, at: server.configuration.now())
        server.logger.debug("push connected", metadata: ["device": "\(session.deviceID)"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The device's side in a child task; when the device goes, its stream of messages ends too.
            group.addTask {
                defer { server.push.disconnect(accountID: session.accountID, id: id) }
                for try await message in inbound.messages(maxSize: 4096) {
                    guard case .text(let text) = message,
                        let ack = try? JSONDecoder().decode(PushMessage.self, from: Data(text.utf8)), ack.type == .applied,
                        let zoneAddress = ack.zone
                    else { continue }
                    // Acknowledgements are writes: a device sending them faster than its request rate
                    // has them dropped (the next one carries the same information).
                    let now = server.configuration.now()
                    guard
                        (try? server.throttle(
                            "session:\(session.tokenDigest)", limit: server.configuration.sessionRateLimit, now: now)) != nil
                    else { continue }
                    let zone = ZoneKey(accountID: session.accountID, address: zoneAddress)
                    server.watermarks.note(DeviceWatermark(deviceID: session.deviceID, zone: zone, sequence: ack.sequence))
                }
            }
            // The server's side in this task, which spares a task per socket.
            for await message in messages {
                // An encoder per message rather than one per socket: idle sockets then hold none.
                try await outbound.write(.text(String(decoding: try JSONEncoder().encode(message), as: UTF8.self)))
            }
            // The stream ended: the device went, was signed out, or the server is shutting down (then this
            // says which).
            group.cancelAll()
            let stored = try? await server.store.credentials(sessionDigest: session.tokenDigest, apiTokenDigest: nil)
            if let stored, stored.session?.revoked ?? true {
                try? await outbound.close(.policyViolation, reason: "signed out")
            } else {
                try? await outbound.close(.goingAway, reason: "server shutting down")
            }
        }
    }
}
