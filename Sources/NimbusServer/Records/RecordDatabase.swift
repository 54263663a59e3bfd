import NimbusCore
import NimbusStore

/// The database a `/database/1/{container}/{environment}/{database}` request addresses, and its caller.
struct RecordDatabase: Sendable {
    enum Environment: String, Sendable, CaseIterable { case development, production }
    enum Scope: String, Sendable, CaseIterable { case `private`, `public`, shared }

    let container: String
    let environment: Environment
    let scope: Scope
    /// The signed-in user's record name (their account id), which owns their private zones.
    let callerID: String
    let deviceID: String

    /// Zones of one account's database are one service of the substrate, so its change feed, tokens
    /// and push messages are the same as every other service's.
    var service: ZoneAddress.Service { .init(rawValue: "db:\(container):\(environment.rawValue):\(scope.rawValue)") }

    func zone(_ name: String) -> ZoneKey { ZoneKey(accountID: callerID, address: ZoneAddress(service: service, name: name)) }

    func zoneID(_ name: String) -> ZoneID { ZoneID(zoneName: name, ownerRecordName: callerID) }

    static let defaultZoneName = ZoneID.defaultZone.zoneName
}
