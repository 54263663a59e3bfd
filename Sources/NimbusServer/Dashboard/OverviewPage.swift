import Hummingbird
import HummingbirdCore
import NimbusCore
import NimbusStore

/// The first page: for administrators the server's teams, apps and containers, with forms to add them;
/// for everyone their own account and data.
struct OverviewPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var userRecordName: String
    var teams: [Team] = []
    var apps: [AppRow] = []
    var containers: [ContainerRow] = []
    var hasTeams = false

    struct AppRow: Sendable {
        var bundleID: String
        var teamID: String
        var keyValueStoreIdentifier: String
        var containers: String
    }

    struct ContainerRow: Sendable {
        var identifier: String
        var teamID: String
        var link: String
    }

    static func load(_ viewer: DashboardViewer, server: ServerState, query: URI, error: String? = nil) async throws -> Self {
        var model = OverviewPageModel(
            chrome: DashboardChrome(
                title: viewer.isAdministrator ? "Teams, apps and containers" : "Your iCloud data", viewer: viewer,
                section: "overview", error: error, notice: DashboardNotice.message(in: query)),
            userRecordName: viewer.account.id)
        guard viewer.isAdministrator else { return model }
        model.teams = try await server.store.teams()
        model.hasTeams = !model.teams.isEmpty
        model.apps = try await server.store.apps().map {
            AppRow(
                bundleID: $0.bundleID, teamID: $0.teamID, keyValueStoreIdentifier: $0.keyValueStoreIdentifier,
                containers: $0.containers.joined(separator: ", "))
        }
        model.containers = try await server.store.containers().map {
            ContainerRow(
                identifier: $0.identifier, teamID: $0.teamID,
                link: "/dashboard/containers/" + DashboardLinks.encoded($0.identifier))
        }
        return model
    }
}

/// The overview's forms: a team, an app, a container, an entitlement, through `AdminService`.
struct OverviewForms {
    let server: ServerState
    var admin: AdminService { AdminService(server: server) }

    func register(on router: RouterGroup<DashboardRequestContext>, viewer: @escaping DashboardViewerLoader) {
        router.post("teams") { request, context in
            try await submit(request, context, viewer, done: .teamCreated) { form in
                _ = try await admin.createTeam(
                    CreateTeamRequest(teamID: form.trimmed("teamID"), name: form.trimmed("name") ?? ""))
            }
        }
        router.post("apps") { request, context in
            try await submit(request, context, viewer, done: .appCreated) { form in
                _ = try await admin.createApp(
                    CreateAppRequest(
                        bundleID: form.trimmed("bundleID") ?? "", teamID: form.trimmed("teamID") ?? "",
                        keyValueStoreIdentifier: form.trimmed("keyValueStoreIdentifier")))
            }
        }
        router.post("containers") { request, context in
            try await submit(request, context, viewer, done: .containerCreated) { form in
                _ = try await admin.createContainer(
                    Container(identifier: form.trimmed("identifier") ?? "", teamID: form.trimmed("teamID") ?? ""))
            }
        }
        router.post("entitlements") { request, context in
            try await submit(request, context, viewer, done: .entitled) { form in
                _ = try await admin.entitle(bundleID: form.trimmed("bundleID") ?? "", container: form.trimmed("container") ?? "")
            }
        }
    }

    private func submit(
        _ request: Request, _ context: DashboardRequestContext, _ viewer: DashboardViewerLoader, done: DashboardNotice,
        _ action: @escaping (DashboardForm) async throws -> Void
    ) async throws -> Response {
        let viewer = try await viewer(context)
        try viewer.requireAdministrator()
        let form = try await DashboardForm.read(request)
        return try await DashboardSubmission.run(request, done: "/dashboard" + DashboardLinks.query([("notice", done.rawValue)]))
        {
            try await action(form)
        } failed: { error, status in
            DashboardRenderer.shared.page(
                "overview", try await OverviewPageModel.load(viewer, server: server, query: request.uri, error: error),
                status: status)
        }
    }
}
