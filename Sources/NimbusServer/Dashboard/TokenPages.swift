import Hummingbird
import HummingbirdCore
import NimbusCore
import NimbusStore

/// API tokens and server-to-server keys: administrators see every container's, developers their teams'.
/// A new token's secret is shown once, on the page that answers its creation, and never stored.
struct TokenPages {
    let server: ServerState
    var admin: AdminService { AdminService(server: server) }

    func register(on router: RouterGroup<DashboardRequestContext>, viewer: @escaping DashboardViewerLoader) {
        router.get("tokens") { request, context in
            let viewer = try await viewer(context)
            return DashboardRenderer.shared.page(
                "tokens", try await page(viewer, notice: DashboardNotice.message(in: request.uri)))
        }
        router.post("tokens") { request, context in
            let viewer = try await viewer(context)
            let form = try await DashboardForm.read(request)
            do {
                let container = try await viewer.developedContainer(form.trimmed("container") ?? "", in: server.store)
                let created = try await admin.createAPIToken(
                    CreateAPITokenRequest(
                        container: container.identifier, bundleID: form.trimmed("bundleID") ?? "", name: form.trimmed("name"),
                        allowedOrigins: try Self.origins(form.value("origins") ?? "")))
                var model = try await page(viewer, notice: DashboardNotice.tokenCreated.text)
                model.createdToken = created.apiToken
                return DashboardRenderer.shared.page("tokens", model)
            } catch let error as NimbusError where error.code != .internalError {
                var model = try await page(viewer, notice: nil)
                model.chrome.error = error.reason
                return DashboardRenderer.shared.page("tokens", model, status: HTTPResponse.Status(code: error.code.httpStatus))
            }
        }
        router.post("tokens/:token/revoke") { request, context in
            let viewer = try await viewer(context)
            _ = try await DashboardForm.read(request)
            let id = try context.parameters.require("token")
            guard let token = try await server.store.apiTokens().first(where: { $0.id == id }) else {
                throw NimbusError.notFound("no such page")
            }
            _ = try await viewer.developedContainer(token.containerID, in: server.store)
            try await admin.revokeAPIToken(id: id)
            return DashboardRenderer.redirect(to: "/dashboard/tokens?notice=" + DashboardNotice.tokenRevoked.rawValue)
        }
        router.post("keys") { request, context in
            let viewer = try await viewer(context)
            let form = try await DashboardForm.read(request)
            return try await DashboardSubmission.run(
                request, done: "/dashboard/tokens?notice=" + DashboardNotice.keyAdded.rawValue
            ) {
                let container = try await viewer.developedContainer(form.trimmed("container") ?? "", in: server.store)
                _ = try await admin.createServerKey(
                    CreateServerKeyRequest(
                        container: container.identifier, publicKey: form.value("publicKey") ?? "", name: form.trimmed("name")),
                    creator: viewer.session)
            } failed: { error, status in
                var model = try await page(viewer, notice: nil)
                model.chrome.error = error
                return DashboardRenderer.shared.page("tokens", model, status: status)
            }
        }
        router.post("keys/:key/revoke") { request, context in
            let viewer = try await viewer(context)
            _ = try await DashboardForm.read(request)
            let id = try context.parameters.require("key")
            guard let key = try await server.store.serverKey(id: id) else { throw NimbusError.notFound("no such page") }
            _ = try await viewer.developedContainer(key.container, in: server.store)
            try await admin.revokeServerKey(id: id)
            return DashboardRenderer.redirect(to: "/dashboard/tokens?notice=" + DashboardNotice.keyRevoked.rawValue)
        }
    }

    /// One origin a line or separated by spaces or commas, each `scheme://host[:port]`.
    static func origins(_ text: String) throws(NimbusError) -> [String] {
        let origins = text.split(whereSeparator: { $0.isWhitespace || $0 == "," }).map(String.init)
        for origin in origins { try APITokenRecord.validate(origin: origin) }
        return origins
    }

    private func page(_ viewer: DashboardViewer, notice: String?) async throws -> TokensPageModel {
        let containers = try await server.store.containers().filter { viewer.isAdministrator || viewer.teams.contains($0.teamID) }
        let visible = Set(containers.map(\.identifier))
        let apps = try await server.store.apps().filter { app in app.containers.contains(where: visible.contains) }
        let tokens = try await server.store.apiTokens().filter { visible.contains($0.containerID) }.map {
            TokensPageModel.TokenRow(
                id: $0.id, name: $0.name, bundleID: $0.bundleID, container: $0.containerID,
                origins: $0.allowedOrigins.isEmpty ? "any" : $0.allowedOrigins.joined(separator: " "), revoked: $0.revoked,
                revokeAction: "/dashboard/tokens/\(DashboardLinks.encoded($0.id))/revoke")
        }
        var keys = [TokensPageModel.KeyRow]()
        for key in try await server.store.serverKeys() where visible.contains(key.container) {
            keys.append(
                TokensPageModel.KeyRow(
                    id: key.id, name: key.name, container: key.container,
                    creator: try await server.store.account(id: key.creatorAccountID)?.email ?? key.creatorAccountID,
                    revoked: key.revoked, revokeAction: "/dashboard/keys/\(DashboardLinks.encoded(key.id))/revoke"))
        }
        return TokensPageModel(
            chrome: DashboardChrome(title: "API tokens and server keys", viewer: viewer, section: "tokens", notice: notice),
            tokens: tokens, keys: keys, apps: apps.map { Option(value: $0.bundleID, label: $0.bundleID, selected: false) },
            containers: containers.map { Option(value: $0.identifier, label: $0.identifier, selected: false) },
            canCreate: !containers.isEmpty)
    }
}

struct TokensPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var tokens: [TokenRow]
    var keys: [KeyRow]
    var apps: [Option]
    var containers: [Option]
    var canCreate: Bool
    var createdToken: String?

    struct TokenRow: Sendable {
        var id: String
        var name: String
        var bundleID: String
        var container: String
        var origins: String
        var revoked: Bool
        var revokeAction: String
    }

    struct KeyRow: Sendable {
        var id: String
        var name: String
        var container: String
        var creator: String
        var revoked: Bool
        var revokeAction: String
    }
}
