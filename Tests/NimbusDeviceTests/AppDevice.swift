import Foundation
import Synchronization
import Logging
import NimbusCore
import NimbusDevice
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// A device as an app sees it: a root whose daemon (a real `DeviceHost`, with its control socket) keeps the
/// container's folder in sync, and the `UbiquityDevice` an app opens on it.
final class AppDevice: Sendable {
    let device: DeviceSyncTests.Device
    let root: URL
    let ubiquity: UbiquityDevice
    private let name: String
    private let deployment: TestDeployment
    private let app: TestServer.SeededApp
    private let host = Mutex<Task<Void, any Error>?>(nil)

    var container: URL { device.folder }
    var documents: URL { device.folder.appendingPathComponent("Documents") }

    init(_ name: String, deployment: TestDeployment, app: TestServer.SeededApp, onDemand: Bool = false) async throws {
        device = try await DeviceSyncTests.Fixture.device(name, deployment: deployment, app: app, onDemand: onDemand)
        root = device.folder.deletingLastPathComponent().deletingLastPathComponent()
        ubiquity = UbiquityDevice(root: root)
        self.name = name
        self.deployment = deployment
        self.app = app
    }

    /// Starts the device's daemon and waits until its control socket answers.
    func start() async throws {
        let session = try await deployment.signIn(email: "ann@example.com", device: name + " daemon")
        let daemon = DeviceDaemon(
            engine: device.engine, folder: device.folder, session: session, container: app.container,
            rescanInterval: .seconds(600), logger: Logger(label: "test"))
        let host = DeviceHost(root: root, daemons: [daemon])
        self.host.withLock { $0 = Task { try await host.run() } }
        let root = root
        #expect(
            try await eventually {
                (try? await DaemonConnection.request(ControlRequest(command: .status), root: root).folders?.first?.lastSyncedAt)
                    != nil
            }, "the daemon answers once its first round is done")
    }

    /// Stops the daemon (the device goes offline) and waits until its socket is gone.
    func stop() async {
        let task = host.withLock { task in
            defer { task = nil }
            return task
        }
        task?.cancel()
        _ = await task?.result
    }

    deinit { host.withLock { $0 }?.cancel() }

    /// Two devices of one user against one real server, each with its daemon running.
    static func pair(onDemandB: Bool = false) async throws -> (TestDeployment, AppDevice, AppDevice) {
        let deployment = try await TestDeployment.start(.oneNode)
        let app = try await deployment.seedApp()
        let a = try await AppDevice("phone", deployment: deployment, app: app)
        let b = try await AppDevice("laptop", deployment: deployment, app: app, onDemand: onDemandB)
        try await a.start()
        try await b.start()
        return (deployment, a, b)
    }
}

/// A `Document` holding text, as the Notes tutorial's.
final class TextDocument: Document, @unchecked Sendable {
    private let state = Mutex<(text: String, loads: Int)>((text: "", loads: 0))

    var text: String {
        get { state.withLock { $0.text } }
        set { state.withLock { $0.text = newValue } }
    }

    /// How many times the file was read into it.
    var loads: Int { state.withLock { $0.loads } }

    override func contents(forType typeName: String?) throws -> DocumentWrapper { .regularFile(Data(text.utf8)) }

    override func load(fromContents contents: DocumentWrapper, ofType typeName: String?) throws {
        guard let data = contents.regularFileContents else { throw NimbusError.badRequest("a note is one file") }
        state.withLock { $0 = (text: String(decoding: data, as: UTF8.self), loads: $0.loads + 1) }
    }
}

/// A `Document` whose contents are whatever wrapper it holds: files or packages as given.
final class PackageDocument: Document, @unchecked Sendable {
    private let held = Mutex(DocumentWrapper.directory([:]))

    var wrapper: DocumentWrapper {
        get { held.withLock { $0 } }
        set { held.withLock { $0 = newValue } }
    }

    override func contents(forType typeName: String?) throws -> DocumentWrapper { wrapper }

    override func load(fromContents contents: DocumentWrapper, ofType typeName: String?) throws { wrapper = contents }
}
