import Hummingbird
import NimbusCore
import NimbusStore

/// The context of the dashboard's pages for a signed-in person: it cannot exist without a valid
/// dashboard session (the session cookie, never a bearer token).
struct DashboardRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let session: AuthenticatedSession
    /// What every form of this session must carry back (`DashboardSessionMiddleware` checks it).
    let csrfToken: String

    init(context: AppRequestContext) throws {
        guard case .success(let session) = context.credentials.session, let csrfToken = context.credentials.dashboardCSRF else {
            throw DashboardRedirect.signIn
        }
        self.session = session
        self.csrfToken = csrfToken
        coreContext = context.coreContext
    }

    var requestDecoder: WireDecoder { WireDecoder() }
}

/// Who is looking at the dashboard, and what they may see: administrators everything; developers their
/// teams' containers; every signed-in person their own data.
struct DashboardViewer: Sendable {
    let account: AccountRecord
    let session: AuthenticatedSession
    let csrfToken: String
    /// The teams the viewer is a developer of.
    let teams: Set<String>

    var isAdministrator: Bool { account.isAdministrator }

    /// The container, when the viewer administers the server or develops it; otherwise the answer for a
    /// page that does not exist, so another team's container cannot even be confirmed to exist.
    func developedContainer(_ identifier: String, in store: any Store) async throws -> Container {
        guard let container = try await store.container(identifier: identifier),
            isAdministrator || teams.contains(container.teamID)
        else { throw NimbusError.notFound("no such page") }
        return container
    }

    /// Pages about apps, their schemas and other people's data are for administrators only: anyone
    /// else gets the same answer as for a page that does not exist, so nothing about it leaks.
    func requireAdministrator() throws(NimbusError) {
        guard isAdministrator else { throw NimbusError.notFound("no such page") }
    }

    /// Another user's data is the administrators'; one's own is everyone's.
    func requireAccess(toUser userRecordName: String) throws(NimbusError) {
        guard isAdministrator || userRecordName == account.id else { throw NimbusError.notFound("no such page") }
    }
}

/// Where a dashboard request is sent instead of being answered.
enum DashboardRedirect: Error {
    /// No valid session: to the sign-in page.
    case signIn
}
