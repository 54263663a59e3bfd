import Foundation
import NimbusCore

/// A device root: the daemons of every container it mirrors, and the root's control socket answering for
/// all of them (by the folder a path is in).
package struct DeviceHost: Sendable {
    let root: URL
    let daemons: [DeviceDaemon]

    package init(root: URL, daemons: [DeviceDaemon]) {
        self.root = root
        self.daemons = daemons
    }

    /// Runs every daemon until cancelled; refuses to start when another host serves the root.
    package func run() async throws {
        let controls = daemons.map(\.control)
        let socket = try ControlSocket(path: ControlSocket.path(root: root)) { await Self.answer($0, controls) }
        defer { socket.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for daemon in daemons { group.addTask { try await daemon.run() } }
            try await group.waitForAll()
        }
    }

    /// Routes a request to the folder its path is in; with no path, every folder's status.
    static func answer(_ request: ControlRequest, _ controls: [DeviceControl]) async -> ControlResponse {
        guard let path = request.path, !path.isEmpty else {
            var folders: [FolderStatus] = []
            for control in controls { folders += await control.answer(request).folders ?? [] }
            return ControlResponse(folders: folders)
        }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        let owner =
            path.hasPrefix("/")
            ? controls.first { absolute == $0.folder.path || absolute.hasPrefix($0.folder.path + "/") }
            : controls.count == 1 ? controls.first : nil
        guard let owner else {
            let folders = controls.map(\.folder.path).joined(separator: ", ")
            return ControlResponse(error: "\(path) is not inside a synced folder (\(folders))")
        }
        return await owner.answer(request)
    }
}
