/// `users/caller`: the signed-in user as a CloudKit user identity.
public struct UserIdentity: Codable, Sendable, Hashable {
    public var userRecordName: String
    /// How the user was found (`users/discover`).
    public var lookupInfo: LookupInfo?
    /// The user's names, when they gave them and may be discovered.
    public var nameComponents: NameComponents?

    public init(userRecordName: String, lookupInfo: LookupInfo? = nil, nameComponents: NameComponents? = nil) {
        self.userRecordName = userRecordName
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
    }

    /// One way to find a user: by email address, phone number or user record name.
    public struct LookupInfo: Codable, Sendable, Hashable {
        public var emailAddress: String?
        public var phoneNumber: String?
        public var userRecordName: String?

        public init(emailAddress: String? = nil, phoneNumber: String? = nil, userRecordName: String? = nil) {
            self.emailAddress = emailAddress
            self.phoneNumber = phoneNumber
            self.userRecordName = userRecordName
        }
    }

    public struct NameComponents: Codable, Sendable, Hashable {
        public var givenName: String?
        public var familyName: String?

        public init(givenName: String?, familyName: String?) {
            self.givenName = givenName
            self.familyName = familyName
        }
    }
}
