import Foundation
import NimbusCore
import NimbusStore

/// `users/*`: who the caller is, and finding other users. Only users who chose to be discoverable
/// (`AccountProfile.discoverable`) are ever found, and a lookup that finds no one answers the same
/// whether or not the email, phone number or id belongs to an account.
extension RecordService {
    static let maxLookups = 200
    /// `GET users/discover` lists at most this many users.
    static let maxDiscoverableListed = 1000

    func caller(_ database: RecordDatabase) throws -> UsersResponse {
        UsersResponse(users: [UserIdentity(userRecordName: try database.requireCaller().userRecordName)])
    }

    func currentUser(_ database: RecordDatabase) async throws -> CurrentUserResponse {
        let name = try database.requireCaller().userRecordName
        let profile = try await server.store.account(id: name)?.profile ?? AccountProfile()
        return CurrentUserResponse(userRecordName: name, firstName: profile.firstName, lastName: profile.lastName)
    }

    func discoverUsers(_ database: RecordDatabase, _ request: UsersDiscoverRequest) async throws -> UsersResponse {
        _ = try database.requireCaller()
        try Self.checkLookupCount(request.lookupInfos.count, "lookupInfos")
        for info in request.lookupInfos
        where [info.emailAddress, info.phoneNumber, info.userRecordName].compactMap({ $0 }).count != 1 {
            throw NimbusError.badRequest("each of lookupInfos names one of emailAddress, phoneNumber or userRecordName")
        }
        let found = try await server.store.discoverableAccounts(
            emails: request.lookupInfos.compactMap(\.emailAddress),
            phoneNumbers: request.lookupInfos.compactMap { $0.phoneNumber.flatMap(AccountProfile.normalizedPhoneNumber) },
            ids: request.lookupInfos.compactMap(\.userRecordName), limit: Self.maxLookups)
        // One identity per lookup that found someone, in the order asked, carrying the lookup that found it.
        return UsersResponse(
            users: request.lookupInfos.compactMap { info in
                found.first { account in
                    info.emailAddress.map { $0.caseInsensitiveCompare(account.email) == .orderedSame }
                        ?? info.phoneNumber.map { AccountProfile.normalizedPhoneNumber($0) == account.profile.phoneNumber }
                        ?? (info.userRecordName == account.id)
                }.map { Self.identity($0, lookupInfo: info) }
            })
    }

    func discoverAllUsers(_ database: RecordDatabase) async throws -> UsersResponse {
        _ = try database.requireCaller()
        let found = try await server.store.discoverableAccounts(
            emails: nil, phoneNumbers: nil, ids: nil, limit: Self.maxDiscoverableListed)
        return UsersResponse(users: found.map { Self.identity($0, lookupInfo: UserIdentity.LookupInfo(userRecordName: $0.id)) })
    }

    func lookupUsersByEmail(_ database: RecordDatabase, _ request: UsersLookupRequest) async throws -> LegacyUsersResponse {
        try await legacyLookup(database, request, key: \.emailAddress, "emailAddress")
    }

    func lookupUsersByID(_ database: RecordDatabase, _ request: UsersLookupRequest) async throws -> LegacyUsersResponse {
        try await legacyLookup(database, request, key: \.userRecordName, "userRecordName")
    }

    private func legacyLookup(
        _ database: RecordDatabase, _ request: UsersLookupRequest, key: KeyPath<UsersLookupRequest.Item, String?>, _ name: String
    ) async throws -> LegacyUsersResponse {
        let infos = try request.users.map { item in
            guard let value = item[keyPath: key] else { throw NimbusError.badRequest("each of users names its \(name)") }
            return name == "emailAddress"
                ? UserIdentity.LookupInfo(emailAddress: value) : UserIdentity.LookupInfo(userRecordName: value)
        }
        let found = try await discoverUsers(database, UsersDiscoverRequest(lookupInfos: infos))
        return LegacyUsersResponse(
            users: found.users.map { identity in
                LegacyUsersResponse.User(
                    userRecordName: identity.userRecordName, firstName: identity.nameComponents?.givenName,
                    lastName: identity.nameComponents?.familyName, emailAddress: identity.lookupInfo?.emailAddress)
            })
    }

    private static func checkLookupCount(_ count: Int, _ key: String) throws {
        guard (1...maxLookups).contains(count) else {
            throw NimbusError.badRequest("\(key) must hold 1 to \(maxLookups) lookups")
        }
    }

    /// A discoverable user as others see them: their names, and only the lookup that found them (never
    /// their other addresses).
    private static func identity(_ account: AccountRecord, lookupInfo: UserIdentity.LookupInfo) -> UserIdentity {
        let names =
            account.profile.firstName == nil && account.profile.lastName == nil
            ? nil : UserIdentity.NameComponents(givenName: account.profile.firstName, familyName: account.profile.lastName)
        return UserIdentity(userRecordName: account.id, lookupInfo: lookupInfo, nameComponents: names)
    }
}
