import Foundation
import HummingbirdBcrypt
import NIOPosix
import NimbusCore
import NimbusStore

/// Sign-up, sign-in (which registers the device), sign-out, and the caller's devices.
struct AuthService: Sendable {
    let server: ServerState

    func signUp(_ request: SignUpRequest) async throws -> SignUpResponse {
        let email = request.email.trimmingCharacters(in: .whitespaces)
        try Identifiers.validateEmail(email)
        try Identifiers.validatePassword(request.password)
        try server.throttle(
            "signin:\(email.lowercased())", limit: server.configuration.signInRateLimit, now: server.configuration.now())
        let account = AccountRecord(
            id: Secrets.userRecordName(), email: email, passwordHash: try await hash(request.password),
            isAdministrator: false, createdAt: server.configuration.now())
        do {
            try await server.store.createAccount(account)
        } catch StoreError.duplicate {
            throw NimbusError(.exists, "an account with this email already exists; sign in instead")
        }
        return SignUpResponse(userRecordName: account.id)
    }

    func signIn(_ request: SignInRequest) async throws -> SignInResponse {
        let now = server.configuration.now()
        let deviceName = request.deviceName.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !deviceName.isEmpty, deviceName.utf8.count <= 200 else {
            throw NimbusError.badRequest("deviceName must be 1 to 200 bytes")
        }
        try server.throttle("signin:\(request.email.lowercased())", limit: server.configuration.signInRateLimit, now: now)
        let account = try await server.store.account(email: request.email)
        // Verify against a real hash even for unknown emails, so timing does not reveal which exist.
        let passwordMatches = await verify(request.password, hash: account?.passwordHash ?? server.decoyPasswordHash)
        guard let account, passwordMatches else {
            throw NimbusError.authenticationFailed("the email or password is wrong")
        }
        var deviceID = UUIDString.random()
        if let requested = request.deviceID, let existing = try await server.store.device(id: requested),
            existing.accountID == account.id
        {
            deviceID = existing.id
        }
        try await server.store.saveDevice(DeviceRecord(id: deviceID, accountID: account.id, name: deviceName, lastSeenAt: now))
        let token = Secrets.sessionToken()
        let expiresAt = now.addingTimeInterval(server.configuration.sessionLifetime.seconds)
        try await server.store.createSession(
            SessionRecord(tokenDigest: Secrets.digest(token), accountID: account.id, deviceID: deviceID, expiresAt: expiresAt))
        server.logger.info("signed in", metadata: ["account": "\(account.id)", "device": "\(deviceID)"])
        return SignInResponse(
            sessionToken: token, expiresAt: expiresAt.milliseconds, userRecordName: account.id,
            deviceID: deviceID)
    }

    func signOut(_ session: AuthenticatedSession) async throws {
        try await server.store.revokeSession(tokenDigest: session.tokenDigest)
        server.credentialCache.invalidateAll()
    }

    /// Signs one of an account's devices out everywhere; false when the account has no such device.
    func signOut(deviceID: String, of accountID: String) async throws -> Bool {
        guard let device = try await server.store.device(id: deviceID), device.accountID == accountID else { return false }
        try await server.store.revokeSessions(deviceID: deviceID)
        server.credentialCache.invalidateAll()
        server.push.disconnect(deviceID: deviceID, of: accountID)
        return true
    }

    /// How long an app password lasts: until its owner revokes it, in practice (ten years).
    static let appPasswordLifetime: TimeInterval = 10 * 365 * 86_400
    /// App passwords sign in as devices of their own, whose IDs start so: only those are listed and
    /// revoked as app passwords, never a device that signed in with the account's password.
    static let appPasswordDevicePrefix = "app-"
    /// The device ID of an app password that stores Finder's own files (`._name`, `.DS_Store`) as documents
    /// starts so: the password's one setting lives in its ID, so it needs no column and goes with it.
    static let finderFilesDevicePrefix = "app-finder-"

    /// A new app password for the caller's account: a device of its own named `name`, whose one session is
    /// the password. Revoking it signs that device out and nothing else.
    func createAppPassword(_ session: AuthenticatedSession, _ request: AppPasswordRequest) async throws -> AppPassword {
        let name = request.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty, name.utf8.count <= 200, !Identifiers.containsControlCharacter(name) else {
            throw NimbusError.badRequest("an app password's name is 1 to 200 bytes without control characters")
        }
        guard let account = try await server.store.account(id: session.accountID) else {
            throw NimbusError.authenticationFailed("the account no longer exists")
        }
        let now = server.configuration.now()
        let deviceID =
            (request.keepFinderFiles == true ? Self.finderFilesDevicePrefix : Self.appPasswordDevicePrefix) + UUIDString.random()
        try await server.store.saveDevice(DeviceRecord(id: deviceID, accountID: account.id, name: name, lastSeenAt: now))
        let password = Secrets.appPassword()
        try await server.store.createSession(
            SessionRecord(
                tokenDigest: Secrets.digest(password), accountID: account.id, deviceID: deviceID,
                expiresAt: now.addingTimeInterval(Self.appPasswordLifetime)))
        server.logger.info("app password created", metadata: ["account": "\(account.id)", "device": "\(deviceID)"])
        return AppPassword(
            deviceID: deviceID, name: name, createdAt: now.milliseconds, password: password, userName: account.email,
            keepsFinderFiles: request.keepFinderFiles == true)
    }

    /// The caller's app passwords that still sign in.
    func appPasswords(_ session: AuthenticatedSession) async throws -> AppPasswordList {
        guard let account = try await server.store.account(id: session.accountID) else {
            throw NimbusError.authenticationFailed("the account no longer exists")
        }
        let live = try await server.store.signedInDevices(accountID: account.id, at: server.configuration.now())
        let devices = try await server.store.devices(accountID: account.id).filter {
            $0.id.hasPrefix(Self.appPasswordDevicePrefix) && live.contains($0.id)
        }
        return AppPasswordList(
            appPasswords: devices.map {
                AppPassword(
                    deviceID: $0.id, name: $0.name, createdAt: $0.lastSeenAt.milliseconds, userName: account.email,
                    keepsFinderFiles: $0.id.hasPrefix(Self.finderFilesDevicePrefix))
            })
    }

    /// Revokes one of the caller's app passwords (by its device ID).
    func revokeAppPassword(_ session: AuthenticatedSession, deviceID: String) async throws {
        guard deviceID.hasPrefix(Self.appPasswordDevicePrefix), try await signOut(deviceID: deviceID, of: session.accountID)
        else { throw NimbusError.notFound("no app password \(deviceID.prefix(80)) in this account") }
    }

    func caller(_ session: AuthenticatedSession) async throws -> CallerResponse {
        guard let account = try await server.store.account(id: session.accountID) else {
            throw NimbusError.authenticationFailed("the account no longer exists")
        }
        return CallerResponse(
            userRecordName: account.id, email: account.email, deviceID: session.deviceID, isAdministrator: account.isAdministrator
        )
    }

    func profile(_ session: AuthenticatedSession) async throws -> AccountProfile {
        guard let account = try await server.store.account(id: session.accountID) else {
            throw NimbusError.authenticationFailed("the account no longer exists")
        }
        return account.profile
    }

    /// Replaces the caller's profile; a phone number is kept as its digits (and a leading `+`).
    func updateProfile(_ session: AuthenticatedSession, _ profile: AccountProfile) async throws -> AccountProfile {
        var profile = profile
        for (name, value) in [("firstName", profile.firstName), ("lastName", profile.lastName)] {
            guard let value else { continue }
            guard value.utf8.count <= 255, !Identifiers.containsControlCharacter(value) else {
                throw NimbusError.badRequest("\(name) must be at most 255 bytes without control characters")
            }
        }
        if let number = profile.phoneNumber {
            guard number.utf8.count <= 32, let normalized = AccountProfile.normalizedPhoneNumber(number),
                number.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || " +-().".unicodeScalars.contains($0) })
            else {
                throw NimbusError.badRequest(
                    "phoneNumber \"\(number.prefix(40))\" must be digits, with spaces, dashes or a leading +")
            }
            profile.phoneNumber = normalized
        }
        try await server.store.updateProfile(accountID: session.accountID, profile)
        return profile
    }

    func devices(_ session: AuthenticatedSession) async throws -> DeviceList {
        try await devices(accountID: session.accountID)
    }

    /// An account's devices, each with its last contact and how far it has applied each zone.
    func devices(accountID: String) async throws -> DeviceList {
        var devices = [DeviceStatus]()
        await server.watermarks.flush()
        for device in try await server.store.devices(accountID: accountID) {
            let watermarks = try await server.store.watermarks(deviceID: device.id).map {
                DeviceStatus.Watermark(zone: $0.zone, appliedSequence: $0.applied, currentSequence: $0.current)
            }
            devices.append(
                DeviceStatus(
                    deviceID: device.id, name: device.name, lastSeen: device.lastSeenAt.milliseconds,
                    watermarks: watermarks))
        }
        return DeviceList(devices: devices)
    }

    /// Creates an administrator account, for `nimbus admin init` and the first `serve`.
    func createAdministrator(email: String, password: String) async throws -> AccountRecord {
        try Identifiers.validateEmail(email)
        try Identifiers.validatePassword(password)
        let account = AccountRecord(
            id: Secrets.userRecordName(), email: email, passwordHash: try await hash(password), isAdministrator: true,
            createdAt: server.configuration.now())
        try await server.store.createAccount(account)
        return account
    }

    /// bcrypt runs on NIO's blocking pool: it takes a quarter second at cost 12 and must not stall
    /// the cooperative threads that serve every other request.
    private func hash(_ password: String) async throws -> String {
        let cost = server.configuration.bcryptCost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
    }

    private func verify(_ password: String, hash: String) async -> Bool {
        (try? await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }) ?? false
    }
}

extension Duration {
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
