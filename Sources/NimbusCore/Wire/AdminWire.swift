/// `/admin/1/...` request and response bodies.
public struct Team: Codable, Sendable, Hashable {
    public var teamID: String
    public var name: String
    public init(teamID: String, name: String) {
        self.teamID = teamID
        self.name = name
    }
}

public struct CreateTeamRequest: Codable, Sendable {
    /// Generated when omitted.
    public var teamID: String?
    public var name: String
    public init(teamID: String? = nil, name: String) {
        self.teamID = teamID
        self.name = name
    }
}

public struct App: Codable, Sendable, Hashable {
    public var bundleID: String
    public var teamID: String
    /// The app's key-value store identifier; `TEAMID.bundleID` unless set.
    public var keyValueStoreIdentifier: String
    /// The containers the app is entitled to use.
    public var containers: [String]
    public init(bundleID: String, teamID: String, keyValueStoreIdentifier: String, containers: [String]) {
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyValueStoreIdentifier = keyValueStoreIdentifier
        self.containers = containers
    }
}

public struct CreateAppRequest: Codable, Sendable {
    public var bundleID: String
    public var teamID: String
    public var keyValueStoreIdentifier: String?
    public init(bundleID: String, teamID: String, keyValueStoreIdentifier: String? = nil) {
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyValueStoreIdentifier = keyValueStoreIdentifier
    }
}

public struct Container: Codable, Sendable, Hashable {
    public var identifier: String
    public var teamID: String
    public init(identifier: String, teamID: String) {
        self.identifier = identifier
        self.teamID = teamID
    }
}

public struct EntitlementRequest: Codable, Sendable {
    public var container: String
    public init(container: String) { self.container = container }
}

public struct CreateAPITokenRequest: Codable, Sendable {
    public var container: String
    public var bundleID: String
    public var name: String?
    public init(container: String, bundleID: String, name: String? = nil) {
        self.container = container
        self.bundleID = bundleID
        self.name = name
    }
}

/// An API token as listed; the secret itself is only in `CreatedAPIToken`.
public struct APITokenInfo: Codable, Sendable, Hashable {
    public var tokenID: String
    public var container: String
    public var bundleID: String
    public var name: String
    public var revoked: Bool
    public init(tokenID: String, container: String, bundleID: String, name: String, revoked: Bool) {
        self.tokenID = tokenID
        self.container = container
        self.bundleID = bundleID
        self.name = name
        self.revoked = revoked
    }
}

public struct CreatedAPIToken: Codable, Sendable {
    public var info: APITokenInfo
    /// 64 hexadecimal characters, shown once.
    public var apiToken: String
    public init(info: APITokenInfo, apiToken: String) {
        self.info = info
        self.apiToken = apiToken
    }
}

public struct UserInfo: Codable, Sendable, Hashable {
    public var userRecordName: String
    public var email: String
    public var isAdministrator: Bool
    public init(userRecordName: String, email: String, isAdministrator: Bool) {
        self.userRecordName = userRecordName
        self.email = email
        self.isAdministrator = isAdministrator
    }
}

/// A list answer: `{"items": [...]}`.
public struct ListResponse<Item: Codable & Sendable>: Codable, Sendable {
    public var items: [Item]
    public init(items: [Item]) { self.items = items }
}

/// A container environment's schema in CloudKit's text format (`.ckdb`).
public struct SchemaDocument: Codable, Sendable, Hashable {
    public var text: String
    public init(text: String) { self.text = text }
}

/// `POST /admin/1/containers/{container}/schema/deploy`: copy development to production.
public struct SchemaDeployRequest: Codable, Sendable {
    /// Only report what would change.
    public var dryRun: Bool?
    public init(dryRun: Bool? = nil) { self.dryRun = dryRun }
}

/// What a deploy changes (or would), and what production refuses.
public struct SchemaDeployResponse: Codable, Sendable, Hashable {
    public var changes: [String]
    public var violations: [String]
    public var deployed: Bool

    public init(changes: [String], violations: [String], deployed: Bool) {
        self.changes = changes
        self.violations = violations
        self.deployed = deployed
    }
}

/// `POST /admin/1/keys`: register a server-to-server key (an EC P-256 public key in PEM) for a container.
public struct CreateServerKeyRequest: Codable, Sendable {
    public var container: String
    public var publicKey: String
    public var name: String?

    public init(container: String, publicKey: String, name: String? = nil) {
        self.container = container
        self.publicKey = publicKey
        self.name = name
    }
}

/// A server-to-server key: requests signed with its private key act as the administrator who created it,
/// in the container's public database.
public struct ServerKeyInfo: Codable, Sendable, Hashable {
    public var keyID: String
    public var container: String
    public var name: String
    public var creator: String
    public var revoked: Bool

    public init(keyID: String, container: String, name: String, creator: String, revoked: Bool) {
        self.keyID = keyID
        self.container = container
        self.name = name
        self.creator = creator
        self.revoked = revoked
    }
}

/// A custom security role of a container's environment and the accounts holding it.
public struct RoleInfo: Codable, Sendable, Hashable {
    public struct Member: Codable, Sendable, Hashable {
        public var userRecordName: String
        public var email: String
        public init(userRecordName: String, email: String) {
            self.userRecordName = userRecordName
            self.email = email
        }
    }

    public var role: String
    public var members: [Member]
    public init(role: String, members: [Member]) {
        self.role = role
        self.members = members
    }
}

/// Gives a role to the account with this email address.
public struct RoleMemberRequest: Codable, Sendable, Hashable {
    public var email: String
    public init(email: String) { self.email = email }
}
