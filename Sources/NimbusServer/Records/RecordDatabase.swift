import NimbusCore
import NimbusStore

/// The database a `/database/1/{container}/{environment}/{database}` request addresses, and its caller.
struct RecordDatabase: Sendable {
    enum Environment: String, Sendable, CaseIterable { case development, production }
    enum Scope: String, Sendable, CaseIterable { case `private`, `public`, shared }

    let container: String
    let environment: Environment
    let scope: Scope
    /// The signed-in user (their account id, which is their user record name), if any.
    let caller: Caller?
    /// Whose zones these are: the caller's own in the private database, the container's in the public one.
    let owner: String
    /// Where a user signs in to get a web auth token for this app (`redirectURL` of AUTHENTICATION_REQUIRED).
    var signInURL = "/auth/1/web/signin"
    /// This server as the client reached it, for the upload and download URLs of assets.
    var baseURL = ""
    /// In the shared database, what the zone's owner shared with the caller.
    var shared: SharedScope?
    /// In the public database, the custom security roles the caller holds.
    var roles: Set<String> = []

    /// Where the data lives: a shared zone is a zone of its owner's private database.
    var storageScope: Scope { scope == .shared ? .private : scope }

    /// The database as its owner sees it: a shared zone is one of the owner's private zones.
    var ownerView: RecordDatabase {
        guard scope == .shared else { return self }
        var view = RecordDatabase(container: container, environment: environment, scope: .private, caller: caller, owner: owner)
        view.baseURL = baseURL
        return view
    }

    /// A zone's change token as this database answers it: in the shared database it also names what is
    /// shared with the caller (`SharedScope.token`).
    func syncToken(_ token: ChangeToken) -> String { shared?.token(token) ?? token.encoded }

    func changeToken(_ text: String) throws(NimbusError) -> ChangeToken {
        guard let shared else { return try ChangeToken(encoded: text) }
        return try shared.changeToken(text)
    }

    /// The shared database of whoever the owner shares zones with, as their subscriptions see it.
    var participantsView: RecordDatabase {
        RecordDatabase(container: container, environment: environment, scope: .shared, caller: nil, owner: owner)
    }

    /// The shared database as it shows one owner's zone to the caller.
    func sharedView(owner: String, scope: SharedScope) -> RecordDatabase {
        var view = RecordDatabase(container: container, environment: environment, scope: .shared, caller: caller, owner: owner)
        view.signInURL = signInURL
        view.baseURL = baseURL
        view.shared = scope
        return view
    }

    struct Caller: Sendable {
        var userRecordName: String
        var deviceID: String
    }

    /// The owner of every public database's zones: not an account, so no account's data can meet it.
    static let publicOwner = "_public"
    /// How CloudKit names the owner of the public database's zone.
    static let publicOwnerRecordName = "__defaultOwner__"

    /// Zones of one owner's database are one service of the substrate, so its change feed, tokens
    /// and push messages are the same as every other service's.
    var service: ZoneAddress.Service { Self.service(container, environment, storageScope) }

    static func service(_ container: String, _ environment: Environment, _ scope: Scope) -> ZoneAddress.Service {
        .records(container: container, environment: environment.rawValue, database: scope.rawValue)
    }

    func zone(_ name: String) -> ZoneKey { ZoneKey(accountID: owner, address: ZoneAddress(service: service, name: name)) }

    func zoneID(_ name: String) -> ZoneID {
        ZoneID(zoneName: name, ownerRecordName: scope == .public ? Self.publicOwnerRecordName : owner)
    }

    /// The signed-in caller, or `AUTHENTICATION_REQUIRED` with the sign-in page to get one.
    func requireCaller() throws(NimbusError) -> Caller {
        guard let caller else {
            throw NimbusError(
                .authenticationRequired, "this request needs a signed-in user: sign in and send the ckWebAuthToken it gives",
                redirectURL: signInURL)
        }
        return caller
    }

    static let defaultZoneName = ZoneID.defaultZone.zoneName
}
