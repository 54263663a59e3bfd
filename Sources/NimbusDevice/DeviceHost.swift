import Foundation
import NimbusCore
import NimbusKit

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
        let socket = try ControlSocket(path: ControlSocket.path(root: root), handler: Self.handler(controls))
        defer { socket.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for daemon in daemons { group.addTask { try await daemon.run() } }
            try await group.waitForAll()
        }
    }

    /// Answers the root's control socket for the folders of `controls`.
    package static func handler(_ controls: [DeviceControl]) -> ControlSocket.Handler {
        { request in
            guard request.command == .watch else { return (await answer(request, controls), nil) }
            guard let owner = owner(of: request, controls) else {
                return (ControlResponse(NimbusError.badRequest("a watch names a synced folder")), nil)
            }
            return await owner.watch(request)
        }
    }

    /// Routes a request to the folder its path is in; with no path, every folder's status.
    static func answer(_ request: ControlRequest, _ controls: [DeviceControl]) async -> ControlResponse {
        guard let path = request.path, !path.isEmpty else {
            var folders: [FolderStatus] = []
            for control in controls { folders += await control.answer(request).folders ?? [] }
            return ControlResponse(folders: folders)
        }
        guard let owner = owner(of: request, controls) else {
            let folders = controls.map(\.folder.path).joined(separator: ", ")
            return ControlResponse(NimbusError.badRequest("\(path) is not inside a synced folder (\(folders))"))
        }
        return await owner.answer(request)
    }

    /// The folder a request's path is in (a relative path: the only folder's).
    static func owner(of request: ControlRequest, _ controls: [DeviceControl]) -> DeviceControl? {
        guard let path = request.path, !path.isEmpty else { return controls.count == 1 ? controls.first : nil }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        return path.hasPrefix("/")
            ? controls.first { absolute == $0.folder.path || absolute.hasPrefix($0.folder.path + "/") }
            : controls.count == 1 ? controls.first : nil
    }
}
