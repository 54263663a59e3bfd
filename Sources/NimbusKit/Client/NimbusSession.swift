import Foundation
import NimbusCore

/// A signed-in device: what an app keeps after `NimbusAccount.signIn` to talk to the server as that user.
public struct NimbusSession: Codable, Sendable, Hashable {
    public var server: URL
    public var sessionToken: String
    public var userRecordName: String
    public var deviceID: String
    /// When the session token stops working.
    public var expiresAt: Date
    /// Which certificates the session accepts from its server over https; every client made from it uses
    /// this. Not stored when the session is encoded: a decoded one takes `ServerTrust.processDefault`.
    public var trust: ServerTrust

    public init(
        server: URL, sessionToken: String, userRecordName: String, deviceID: String, expiresAt: Date,
        trust: ServerTrust = .processDefault
    ) {
        self.server = server
        self.sessionToken = sessionToken
        self.userRecordName = userRecordName
        self.deviceID = deviceID
        self.expiresAt = expiresAt
        self.trust = trust
    }

    private enum CodingKeys: String, CodingKey {
        case server, sessionToken, userRecordName, deviceID, expiresAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            server: try container.decode(URL.self, forKey: .server),
            sessionToken: try container.decode(String.self, forKey: .sessionToken),
            userRecordName: try container.decode(String.self, forKey: .userRecordName),
            deviceID: try container.decode(String.self, forKey: .deviceID),
            expiresAt: try container.decode(Date.self, forKey: .expiresAt))
    }
}

/// Account operations that need no session yet.
public enum NimbusAccount {
    /// Creates an account; returns its user record name.
    @discardableResult
    public static func signUp(server: URL, email: String, password: String, trust: ServerTrust = .processDefault)
        async throws -> String
    {
        let client = NimbusClient(server: server, trust: trust)
        let response: SignUpResponse = try await client.send(
            .POST, "/auth/1/signup", body: SignUpRequest(email: email, password: password))
        return response.userRecordName
    }

    /// Signs in and registers this device; pass the `deviceID` of an earlier session to keep the device's
    /// identity, and `trust` for a server whose certificate the system does not trust (a private authority).
    public static func signIn(
        server: URL, email: String, password: String, deviceName: String, deviceID: String? = nil,
        trust: ServerTrust = .processDefault
    ) async throws -> NimbusSession {
        let client = NimbusClient(server: server, trust: trust)
        let response: SignInResponse = try await client.send(
            .POST, "/auth/1/signin",
            body: SignInRequest(email: email, password: password, deviceName: deviceName, deviceID: deviceID))
        return NimbusSession(
            server: server, sessionToken: response.sessionToken, userRecordName: response.userRecordName,
            deviceID: response.deviceID, expiresAt: Date(milliseconds: response.expiresAt), trust: trust)
    }

    /// The signed-in user's names, phone number and whether others may discover them.
    public static func profile(_ session: NimbusSession) async throws -> AccountProfile {
        try await NimbusClient(session: session, apiToken: nil).send(.GET, "/auth/1/profile")
    }

    /// Replaces the user's profile; `discoverable` lets other users find them by email, phone number or
    /// user record name (CloudKit's user discoverability). Returns the profile as stored.
    @discardableResult
    public static func updateProfile(_ session: NimbusSession, _ profile: AccountProfile) async throws -> AccountProfile {
        try await NimbusClient(session: session, apiToken: nil).send(
            .PUT, "/auth/1/profile", body: profile)
    }

    /// A new app password named `name`: what a WebDAV client signs in with (HTTP Basic, the account's email as
    /// the user name). The password is in the answer only.
    /// `keepFinderFiles` stores Finder's own files (`._name`, `.DS_Store`) written with it as documents; by
    /// default they are kept out of sync (readable over WebDAV, never on devices).
    public static func createAppPassword(_ session: NimbusSession, name: String, keepFinderFiles: Bool = false)
        async throws -> AppPassword
    {
        try await NimbusClient(session: session, apiToken: nil).send(
            .POST, "/auth/1/app-passwords", body: AppPasswordRequest(name: name, keepFinderFiles: keepFinderFiles))
    }

    /// The account's app passwords that still sign in (without the passwords themselves).
    public static func appPasswords(_ session: NimbusSession) async throws -> [AppPassword] {
        let list: AppPasswordList = try await NimbusClient(session: session, apiToken: nil).send(.GET, "/auth/1/app-passwords")
        return list.appPasswords
    }

    /// Revokes an app password: the client using it is signed out at once.
    public static func revokeAppPassword(_ session: NimbusSession, deviceID: String) async throws {
        try await NimbusClient(session: session, apiToken: nil).send(
            .DELETE, "/auth/1/app-passwords/\(deviceID)")
    }

    /// Revokes the session on the server.
    public static func signOut(_ session: NimbusSession) async throws {
        try await NimbusClient(session: session, apiToken: nil).send(.POST, "/auth/1/signout")
    }
}
