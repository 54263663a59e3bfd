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

    public init(server: URL, sessionToken: String, userRecordName: String, deviceID: String, expiresAt: Date) {
        self.server = server
        self.sessionToken = sessionToken
        self.userRecordName = userRecordName
        self.deviceID = deviceID
        self.expiresAt = expiresAt
    }
}

/// Account operations that need no session yet.
public enum NimbusAccount {
    /// Creates an account; returns its user record name.
    @discardableResult
    public static func signUp(server: URL, email: String, password: String) async throws -> String {
        let client = NimbusClient(server: server)
        let response: SignUpResponse = try await client.send(
            .POST, "/auth/1/signup", body: SignUpRequest(email: email, password: password))
        return response.userRecordName
    }

    /// Signs in and registers this device; pass the `deviceID` of an earlier session to keep the device's identity.
    public static func signIn(
        server: URL, email: String, password: String, deviceName: String, deviceID: String? = nil
    ) async throws -> NimbusSession {
        let client = NimbusClient(server: server)
        let response: SignInResponse = try await client.send(
            .POST, "/auth/1/signin",
            body: SignInRequest(email: email, password: password, deviceName: deviceName, deviceID: deviceID))
        return NimbusSession(
            server: server, sessionToken: response.sessionToken, userRecordName: response.userRecordName,
            deviceID: response.deviceID, expiresAt: Date(milliseconds: response.expiresAt))
    }

    /// The signed-in user's names, phone number and whether others may discover them.
    public static func profile(_ session: NimbusSession) async throws -> AccountProfile {
        try await NimbusClient(server: session.server, sessionToken: session.sessionToken).send(.GET, "/auth/1/profile")
    }

    /// Replaces the user's profile; `discoverable` lets other users find them by email, phone number or
    /// user record name (CloudKit's user discoverability). Returns the profile as stored.
    @discardableResult
    public static func updateProfile(_ session: NimbusSession, _ profile: AccountProfile) async throws -> AccountProfile {
        try await NimbusClient(server: session.server, sessionToken: session.sessionToken).send(
            .PUT, "/auth/1/profile", body: profile)
    }

    /// Revokes the session on the server.
    public static func signOut(_ session: NimbusSession) async throws {
        try await NimbusClient(server: session.server, sessionToken: session.sessionToken).send(.POST, "/auth/1/signout")
    }
}
