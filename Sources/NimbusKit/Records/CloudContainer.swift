import Foundation
import Logging
import NimbusCore

/// An app's container: its databases, as the signed-in user sees them (CloudKit's `CKContainer`).
///
/// ```swift
/// let container = CloudContainer(identifier: "iCloud.com.example.Cloudy", session: session, apiToken: token)
/// let lists = try await container.privateCloudDatabase.records(matching: Query(recordType: "Lists"))
/// ```
public struct CloudContainer: Sendable {
    public enum Environment: String, Sendable { case development, production }

    public let identifier: String
    public let environment: Environment
    let session: NimbusSession
    let client: NimbusClient

    public init(identifier: String, session: NimbusSession, apiToken: String, environment: Environment = .development) {
        self.identifier = identifier
        self.environment = environment
        self.session = session
        self.client = NimbusClient(session: session, apiToken: apiToken)
    }

    /// The signed-in user's own records.
    public var privateCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .private) }
    /// Records every user of the app can read.
    public var publicCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .public) }
    /// Zones other users shared with the signed-in user.
    public var sharedCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .shared) }

    /// Starts listening for the user's subscription notifications in this container, over the push socket
    /// (reconnecting when it drops). Notifications fired while no listener is connected are not kept:
    /// catch up with the change feeds, as with CloudKit's pushes.
    public func notificationListener() -> NotificationListener {
        NotificationListener(session: session, container: identifier, environment: environment.rawValue)
    }

    /// The signed-in user's record name.
    public func userRecordName() async throws -> String {
        let response: UsersResponse = try await client.send(.GET, privateCloudDatabase.path("users/caller"))
        guard let user = response.users.first else { throw NimbusError(.internalError, "the server named no caller") }
        return user.userRecordName
    }

    /// The users who chose to be discoverable and match one of `lookups` (email addresses, phone numbers
    /// or user record names), in the order asked; lookups that find no one are left out.
    public func discoverUserIdentities(_ lookups: [UserIdentity.LookupInfo]) async throws -> [UserIdentity] {
        let response: UsersResponse = try await client.send(
            .POST, publicCloudDatabase.path("users/discover"), body: UsersDiscoverRequest(lookupInfos: lookups))
        return response.users
    }

    /// Every user who chose to be discoverable (CloudKit's `discoverAllIdentities`).
    public func discoverAllUserIdentities() async throws -> [UserIdentity] {
        let response: UsersResponse = try await client.send(.GET, publicCloudDatabase.path("users/discover"))
        return response.users
    }
}
