import Foundation
import Hummingbird
import NimbusCore

/// Which database a records page looks at: environment, public or a user's private database, zone.
/// Carried in the query of every link and as hidden fields of every form on those pages.
struct RecordScope: Sendable {
    var container: String
    var environment: RecordDatabase.Environment
    var scope: RecordDatabase.Scope
    /// The user whose private database this is.
    var user: String?
    var zone: String

    init(container: String, _ fields: DashboardForm, viewer: DashboardViewer) throws {
        self.container = container
        let environment = fields.trimmed("env") ?? RecordDatabase.Environment.development.rawValue
        guard let parsed = RecordDatabase.Environment(rawValue: environment) else {
            throw NimbusError.badRequest("environment must be development or production, not \(environment)")
        }
        self.environment = parsed
        let database = fields.trimmed("db") ?? RecordDatabase.Scope.public.rawValue
        guard let scope = RecordDatabase.Scope(rawValue: database), scope != .shared else {
            throw NimbusError.badRequest("database must be public or private, not \(database)")
        }
        self.scope = scope
        zone = fields.trimmed("zone") ?? RecordDatabase.defaultZoneName
        if scope == .private {
            let user = fields.trimmed("user") ?? viewer.account.id
            try viewer.requireAccess(toUser: user)
            self.user = user
        }
    }

    /// The database as the API would give it: the public one as the viewer (with their roles), a private
    /// one as its owner, with the viewer's dashboard session as the device that changes it.
    func database(_ viewer: DashboardViewer, server: ServerState, baseURL: String) async throws -> RecordDatabase {
        var database: RecordDatabase
        switch scope {
        case .public, .shared:
            database = RecordDatabase(
                container: container, environment: environment, scope: .public,
                caller: RecordDatabase.Caller(userRecordName: viewer.account.id, deviceID: viewer.session.deviceID),
                owner: RecordDatabase.publicOwner)
            database.roles =
                try await server.roles.holders(container: container, environment: environment)[viewer.account.id] ?? []
        case .private:
            let owner = user ?? viewer.account.id
            guard try await server.store.account(id: owner) != nil else { throw NimbusError.notFound("no user \(owner)") }
            database = RecordDatabase(
                container: container, environment: environment, scope: .private,
                caller: RecordDatabase.Caller(userRecordName: owner, deviceID: viewer.session.deviceID), owner: owner)
        }
        database.baseURL = baseURL
        return database
    }

    var zoneID: ZoneID { ZoneID(zoneName: zone) }

    var queryItems: [(String, String?)] {
        [("env", environment.rawValue), ("db", scope.rawValue), ("user", user), ("zone", zone)]
    }

    var hiddenFields: [HiddenField] { queryItems.compactMap { name, value in value.map { HiddenField(name: name, value: $0) } } }

    var recordsPath: String { "/dashboard/containers/" + DashboardLinks.encoded(container) + "/records" }

    func recordPath(_ name: String) -> String {
        recordsPath + "/" + DashboardLinks.encoded(name) + DashboardLinks.query(queryItems)
    }
}

struct HiddenField: Sendable {
    var name: String
    var value: String
}
