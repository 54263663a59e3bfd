import Hummingbird
import HummingbirdCore
import NimbusCore
import NimbusStore

/// The first page: for administrators the server's teams, apps and containers, with forms to add them;
/// for everyone their own account and data.
struct OverviewPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var userRecordName: String
    /// Administrators and developers see apps and containers: all of them, or their teams'.
    var showsApps = false
    var teams: [TeamRow] = []
    var apps: [AppRow] = []
    var containers: [ContainerRow] = []

    struct TeamRow: Sendable {
        var teamID: String
        var name: String
        var developers: [Developer]
    }

    struct Developer: Sendable {
        var email: String
        var accountID: String
        var teamID: String
    }

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
                title: viewer.isAdministrator || !viewer.teams.isEmpty ? "Teams, apps and containers" : "Your iCloud data",
                viewer: viewer,
                section: "overview", error: error, notice: DashboardNotice.message(in: query)),
            userRecordName: viewer.account.id)
        guard viewer.isAdministrator || !viewer.teams.isEmpty else { return model }
        let visible = { (teamID: String) in viewer.isAdministrator || viewer.teams.contains(teamID) }
        model.showsApps = true
        for team in try await server.store.teams() where visible(team.teamID) {
            var developers = [Developer]()
            for accountID in try await server.store.teamMembers(teamID: team.teamID) {
                let email = try await server.store.account(id: accountID)?.email ?? accountID
                developers.append(Developer(email: email, accountID: accountID, teamID: team.teamID))
            }
            model.teams.append(TeamRow(teamID: team.teamID, name: team.name, developers: developers))
        }
        model.apps = try await server.store.apps().filter { visible($0.teamID) }.map {
            AppRow(
                bundleID: $0.bundleID, teamID: $0.teamID, keyValueStoreIdentifier: $0.keyValueStoreIdentifier,
                containers: $0.containers.joined(separator: ", "))
        }
        model.containers = try await server.store.containers().filter { visible($0.teamID) }.map {
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
        router.post("developers") { request, context in
            try await submit(request, context, viewer, done: .developerAdded) { form in
                let email = form.trimmed("email") ?? ""
                guard let account = try await server.store.account(email: email) else {
                    throw NimbusError.notFound("no account has the email \(email); they sign up first")
                }
                try await server.store.addTeamMember(teamID: form.trimmed("teamID") ?? "", accountID: account.id)
            }
        }
        router.post("developers/remove") { request, context in
            try await submit(request, context, viewer, done: .developerRemoved) { form in
                try await server.store.removeTeamMember(
                    teamID: form.trimmed("teamID") ?? "", accountID: form.trimmed("accountID") ?? "")
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
