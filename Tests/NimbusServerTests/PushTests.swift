import Foundation
import Logging
import NIOCore
import NimbusCore
import NimbusKit
import NimbusTesting
import Synchronization
import Testing
import WSClient

@testable import NimbusServer

/// The push socket over a real WebSocket client.
@Suite(.cleansUp) struct PushTests {
    /// What a connected test device has seen, shared with its connection task.
    final class DeviceState: Sendable {
        let messages = Mutex<[PushMessage]>([])
        let outbound = Mutex<WebSocketOutboundWriter?>(nil)
    }

    /// Connects to `/push/1`, collecting messages, until the server closes the socket.
    struct Device: Sendable {
        let state = DeviceState()
        let task: Task<WebSocketCloseFrame?, any Error>

        init(server: TestServer, session: NimbusSession?) {
            var configuration = WebSocketClientConfiguration()
            if let session { configuration.additionalHeaders = [.authorization: "Bearer \(session.sessionToken)"] }
            let state = self.state
            task = Task {
                try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(server.port)/push/1", configuration: configuration, logger: Logger(label: "test")
                ) { inbound, outbound, _ in
                    state.outbound.withLock { $0 = outbound }
                    for try await message in inbound.messages(maxSize: 1 << 16) {
                        if case .text(let text) = message,
                            let push = try? JSONDecoder().decode(PushMessage.self, from: Data(text.utf8))
                        {
                            state.messages.withLock { $0.append(push) }
                        }
                    }
                }
            }
        }

        /// Messages after the server's `connected` greeting.
        var received: [PushMessage] { state.messages.withLock { $0 }.filter { $0.type != .connected } }
        /// Whether the server has registered the socket (its first message says so).
        var isConnected: Bool { state.messages.withLock { $0.first?.type == .connected } }

        func send(_ message: PushMessage) async throws {
            let data = try JSONEncoder().encode(message)
            try await send(.text(String(decoding: data, as: UTF8.self)))
        }

        func send(_ frame: WebSocketOutboundWriter.OutboundFrame) async throws {
            try await state.outbound.withLock { $0 }?.write(frame)
        }
    }

    /// Sets `key` in the app's key-value store from `session`'s device: one change to the store's zone.
    @discardableResult
    static func set(_ key: String, on server: TestServer, app: TestServer.SeededApp, as session: NimbusSession) async throws
        -> RawResponse
    {
        try await server.request(
            .POST, "/kv/1/\(app.storeIdentifier)/modify", session: session, apiToken: app.apiToken,
            json: #"{"operations":[{"operationType":"set","key":"\#(key)","value":{"type":"BOOLEAN","value":true}}]}"#)
    }

    /// A node on a shared database relays every message it publishes. The relay's function is called the
    /// same way for the hundredth message as for the first: it once grew two stack frames deeper with each
    /// message, so every write cost more than the last until the node's stack overflowed.
    @Test func relayingAMessageCostsTheSameAfterManyMessages() {
        let hub = PushHub()
        let depths = Mutex<[Int]>([])
        hub.relay(
            through: PushHub.Relay(
                send: { _, _ in depths.withLock { $0.append(Thread.callStackReturnAddresses.count) } }, signedOut: { _, _ in }))
        for sequence in 1...100 {
            hub.publish(to: "account", PushMessage(type: .zoneMoved, zone: nil, sequence: Int64(sequence)))
        }
        let recorded = depths.withLock { $0 }
        #expect(recorded.count == 100)
        #expect(Set(recorded).count == 1, "the relay's stack depth went from \(recorded.first ?? 0) to \(recorded.last ?? 0)")
    }

    /// A device signed out on one node loses its push connections there and, through the relay, on every
    /// other node; the account's other devices keep theirs.
    @Test func aDeviceSignedOutLosesItsConnectionsOnEveryNode() async throws {
        let (here, there) = (PushHub(), PushHub())
        let relayed = Mutex<[String]>([])
        here.relay(
            through: PushHub.Relay(
                send: { _, _ in },
                signedOut: { accountID, deviceID in
                    relayed.withLock { $0.append(deviceID) }
                    there.disconnect(deviceID: deviceID, of: accountID, relaying: false)
                }))
        let phoneHere = here.connect(accountID: "ann", deviceID: "phone")
        let phoneThere = there.connect(accountID: "ann", deviceID: "phone")
        let laptopThere = there.connect(accountID: "ann", deviceID: "laptop")
        let bobsPhone = there.connect(accountID: "bob", deviceID: "phone")
        here.disconnect(deviceID: "phone", of: "ann")
        #expect(relayed.withLock { $0 } == ["phone"])
        #expect(here.connectionCount == 0 && there.connectionCount == 2)
        for ended in [phoneHere.messages, phoneThere.messages] {
            var iterator = ended.makeAsyncIterator()
            #expect(await iterator.next() == nil, "the signed-out device's stream ended")
        }
        there.publish(to: "ann", PushMessage(type: .zoneMoved, zone: nil, sequence: 1), relaying: false)
        var laptop = laptopThere.messages.makeAsyncIterator()
        #expect(await laptop.next()?.sequence == 1, "the account's other device still hears")
        there.publish(to: "bob", PushMessage(type: .zoneMoved, zone: nil, sequence: 2), relaying: false)
        var bob = bobsPhone.messages.makeAsyncIterator()
        #expect(await bob.next()?.sequence == 2, "another account's device of the same id is untouched")
    }

    @Test func everyDeviceOfTheAccountHearsThatAZoneMoved() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let phone = try await server.signIn(email: "ann@example.com", device: "phone")
        let laptop = try await server.signIn(email: "ann@example.com", device: "laptop")
        let bob = try await server.signIn(email: "bob@example.com", device: "bob's phone")
        let devices = [
            Device(server: server, session: phone), Device(server: server, session: laptop), Device(server: server, session: bob),
        ]
        #expect(await eventually { devices.allSatisfy(\.isConnected) })

        let response = try await Self.set("a", on: server, app: app, as: phone)
        #expect(response.status == 200)
        let expected = PushMessage(
            type: .zoneMoved, zone: ZoneAddress(service: .keyValue, name: app.storeIdentifier), sequence: 1)
        #expect(await eventually { devices[0].received == [expected] && devices[1].received == [expected] })
        #expect(devices[2].received.isEmpty, "another account's device must hear nothing")
    }

    /// A connected device of a user who has set `keys` (one change each) in the app's key-value store.
    func connectedDevice(_ server: TestServer, afterSetting keys: [String]) async throws
        -> (device: Device, session: NimbusSession, zone: ZoneAddress, app: TestServer.SeededApp)
    {
        let app = try await server.seedApp()
        let phone = try await server.signIn(email: "ann@example.com", device: "phone")
        let device = Device(server: server, session: phone)
        #expect(await eventually { device.isConnected })
        for key in keys {
            try await Self.set(key, on: server, app: app, as: phone)
        }
        return (device, phone, ZoneAddress(service: .keyValue, name: app.storeIdentifier), app)
    }

    @Test func pushSocketsOutliveTheHTTPIdleTimeout() async throws {
        let server = try await TestServer.start { $0.idleTimeout = .milliseconds(200) }
        let app = try await server.seedApp()
        // Under a busy suite this test's own requests can meet the 200 ms timeout too (a connection closed as
        // it is reused, or before its request is read); they are retried, and are idempotent.
        let phone = try await Self.retried { try await server.signIn(email: "ann@example.com", device: "phone") }
        let device = Device(server: server, session: phone)
        #expect(await eventually { device.isConnected })
        // An HTTP connection opened after the socket, and left silent after one request, is closed by
        // the timeout...
        let idle = try await server.rawExchange(Data("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        #expect(idle.closedByServer && idle.text.hasPrefix("HTTP/1.1 200"))
        // ...while the older push socket still hears its zone move.
        let zone = ZoneAddress(service: .keyValue, name: app.storeIdentifier)
        #expect(try await Self.retried { try await Self.set("a", on: server, app: app, as: phone) }.status == 200)
        #expect(await eventually { device.received.contains { $0.type == .zoneMoved && $0.zone == zone } })
    }

    static func retried<T>(_ body: () async throws -> T) async throws -> T {
        for _ in 0..<20 {
            if let value = try? await body() { return value }
        }
        return try await body()
    }

    @Test func anAcknowledgementRecordsTheDevicesWatermark() async throws {
        let server = try await TestServer.start()
        let (device, phone, zone, _) = try await connectedDevice(server, afterSetting: ["a", "b", "c"])
        try await device.send(PushMessage(type: .applied, zone: zone, sequence: 2))
        let recorded = await eventually {
            let list = try? await server.request(.GET, "/auth/1/devices", session: phone).decode(DeviceList.self)
            return list?.devices.first?.watermarks == [DeviceStatus.Watermark(zone: zone, appliedSequence: 2, currentSequence: 3)]
        }
        #expect(recorded)
    }

    @Test func acknowledgementsAreWrittenAfterTheDelayWithoutAReader() async throws {
        let server = try await TestServer.start { $0.acknowledgementDelay = .milliseconds(50) }
        let (device, phone, zone, _) = try await connectedDevice(server, afterSetting: ["a", "b", "c"])
        for sequence: Int64 in [1, 3, 2] { try await device.send(PushMessage(type: .applied, zone: zone, sequence: sequence)) }
        // Read from the store itself: nothing lists the devices (which would write them at once).
        let recorded = await eventually {
            (try? await server.store.watermarks(deviceID: phone.deviceID).first?.applied) == 3
        }
        #expect(recorded)
    }

    @Test func acknowledgementsStillGatheredAreWrittenAtShutdown() async throws {
        let server = try await TestServer.start { $0.acknowledgementDelay = .seconds(3600) }
        let (device, phone, zone, _) = try await connectedDevice(server, afterSetting: ["a"])
        try await device.send(PushMessage(type: .applied, zone: zone, sequence: 1))
        #expect(await eventually { server.server.state.watermarks.pendingCount == 1 })
        #expect(try await server.store.watermarks(deviceID: phone.deviceID).isEmpty)
        await server.stop()
        #expect(try await server.store.watermarks(deviceID: phone.deviceID).first?.applied == 1)
    }

    @Test func unauthenticatedUpgradesAreRefused() async throws {
        let server = try await TestServer.start()
        let device = Device(server: server, session: nil)
        await #expect(throws: (any Error).self) { _ = try await device.task.value }
        #expect(!device.isConnected)
    }

    @Test func peersThatStopAnsweringPingsAreDisconnected() async throws {
        let server = try await TestServer.start { $0.heartbeat = .milliseconds(200) }
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let socket = try SilentWebSocket(port: server.port, sessionToken: session.sessionToken)
        defer { socket.close() }
        #expect(await eventually { server.server.pushConnectionCount == 1 })
        #expect(await eventually(timeout: .seconds(10)) { server.server.pushConnectionCount == 0 })
    }

    @Test func oddMessagesFromADeviceChangeNothing() async throws {
        let server = try await TestServer.start { $0.acknowledgementDelay = .milliseconds(1) }
        let (device, phone, zone, app) = try await connectedDevice(server, afterSetting: ["a", "b"])

        try await device.send(.binary(ByteBuffer(bytes: [0, 1, 2, 255])))
        for text in [
            "", "null", "{", #"{"type":"applied"}"#, #"{"type":"applied","zone":{"service":"kv","name":5},"sequence":1}"#,
        ] {
            try await device.send(.text(text))
        }
        try await device.send(
            PushMessage(type: .applied, zone: ZoneAddress(service: .keyValue, name: "98Z3R5XU29.com.example.Other"), sequence: 1))
        try await device.send(PushMessage(type: .zoneMoved, zone: zone, sequence: 1))
        try await device.send(PushMessage(type: .applied, zone: zone, sequence: -5))
        // More than the zone holds: recorded as all there is, not as changes that never happened.
        try await device.send(PushMessage(type: .applied, zone: zone, sequence: .max))
        let recorded = await eventually {
            let list = try? await server.request(.GET, "/auth/1/devices", session: phone).decode(DeviceList.self)
            return list?.devices.first?.watermarks == [DeviceStatus.Watermark(zone: zone, appliedSequence: 2, currentSequence: 2)]
        }
        #expect(recorded)
        // The socket is still the device's: it hears the next change.
        try await Self.set("c", on: server, app: app, as: phone)
        #expect(await eventually { device.received.last == PushMessage(type: .zoneMoved, zone: zone, sequence: 3) })
    }

    @Test func aFrameOverTheLimitClosesOnlyItsSocket() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let phone = try await server.signIn(email: "ann@example.com", device: "phone")
        let laptop = try await server.signIn(email: "ann@example.com", device: "laptop")
        let (sender, listener) = (Device(server: server, session: phone), Device(server: server, session: laptop))
        #expect(await eventually { sender.isConnected && listener.isConnected })
        try await sender.send(.text(String(repeating: "x", count: 100_000)))
        #expect(await eventually { server.server.pushConnectionCount == 1 })
        try await Self.set("a", on: server, app: app, as: phone)
        let zone = ZoneAddress(service: .keyValue, name: app.storeIdentifier)
        #expect(await eventually { listener.received == [PushMessage(type: .zoneMoved, zone: zone, sequence: 1)] })
    }
}
