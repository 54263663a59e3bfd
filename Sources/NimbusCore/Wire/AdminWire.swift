/// `/admin/1/...` request and response bodies.
package struct Team: Codable, Sendable, Hashable {
    package var teamID: String
    package var name: String
    package init(teamID: String, name: String) {
        self.teamID = teamID
        self.name = name
    }
}

package struct CreateTeamRequest: Codable, Sendable {
    /// Generated when omitted.
    package var teamID: String?
    package var name: String
    package init(teamID: String? = nil, name: String) {
        self.teamID = teamID
        self.name = name
    }
}

package struct App: Codable, Sendable, Hashable {
    package var bundleID: String
    package var teamID: String
    /// The app's key-value store identifier; `TEAMID.bundleID` unless set.
    package var keyValueStoreIdentifier: String
    /// The containers the app is entitled to use.
    package var containers: [String]
    package init(bundleID: String, teamID: String, keyValueStoreIdentifier: String, containers: [String]) {
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyValueStoreIdentifier = keyValueStoreIdentifier
        self.containers = containers
    }
}

package struct CreateAppRequest: Codable, Sendable {
    package var bundleID: String
    package var teamID: String
    package var keyValueStoreIdentifier: String?
    package init(bundleID: String, teamID: String, keyValueStoreIdentifier: String? = nil) {
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyValueStoreIdentifier = keyValueStoreIdentifier
    }
}

package struct Container: Codable, Sendable, Hashable {
    package var identifier: String
    package var teamID: String
    /// Extensions of folders its documents treat as file packages, synced and versioned as one document
    /// (nil: `defaultPackageExtensions`).
    package var packageExtensions: [String]?

    package init(identifier: String, teamID: String, packageExtensions: [String]? = nil) {
        self.identifier = identifier
        self.teamID = teamID
        self.packageExtensions = packageExtensions
    }

    /// Apple's document packages most apps meet.
    package static let defaultPackageExtensions = ["key", "numbers", "pages", "rtfd"]

    package var effectivePackageExtensions: [String] { packageExtensions ?? Self.defaultPackageExtensions }

    /// Extensions are 1 to 32 lowercase letters and digits; a container names at most 100.
    package static func validate(packageExtensions: [String]) throws(NimbusError) {
        guard packageExtensions.count <= 100,
            packageExtensions.allSatisfy({
                (1...32).contains($0.utf8.count)
                    && $0.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }
            })
        else {
            throw .badRequest(
                "packageExtensions are at most 100 extensions of 1 to 32 lowercase letters and digits, without the dot")
        }
    }
}

/// `PUT /admin/1/containers/{container}/packages`: which folder extensions are file packages.
package struct PackageExtensionsRequest: Codable, Sendable {
    package var packageExtensions: [String]
    package init(packageExtensions: [String]) { self.packageExtensions = packageExtensions }
}

package struct EntitlementRequest: Codable, Sendable {
    package var container: String
    package init(container: String) { self.container = container }
}

package struct CreateAPITokenRequest: Codable, Sendable {
    package var container: String
    package var bundleID: String
    package var name: String?
    /// Web origins whose pages may use the token (`https://app.example.com`); absent or empty: any.
    package var allowedOrigins: [String]?
    package init(container: String, bundleID: String, name: String? = nil, allowedOrigins: [String]? = nil) {
        self.container = container
        self.bundleID = bundleID
        self.name = name
        self.allowedOrigins = allowedOrigins
    }
}

/// An API token as listed; the secret itself is only in `CreatedAPIToken`.
package struct APITokenInfo: Codable, Sendable, Hashable {
    package var tokenID: String
    package var container: String
    package var bundleID: String
    package var name: String
    package var revoked: Bool
    package var allowedOrigins: [String]
    package init(tokenID: String, container: String, bundleID: String, name: String, revoked: Bool, allowedOrigins: [String] = [])
    {
        self.tokenID = tokenID
        self.container = container
        self.bundleID = bundleID
        self.name = name
        self.revoked = revoked
        self.allowedOrigins = allowedOrigins
    }
}

package struct CreatedAPIToken: Codable, Sendable {
    package var info: APITokenInfo
    /// 64 hexadecimal characters, shown once.
    package var apiToken: String
    package init(info: APITokenInfo, apiToken: String) {
        self.info = info
        self.apiToken = apiToken
    }
}

package struct UserInfo: Codable, Sendable, Hashable {
    package var userRecordName: String
    package var email: String
    package var isAdministrator: Bool
    package init(userRecordName: String, email: String, isAdministrator: Bool) {
        self.userRecordName = userRecordName
        self.email = email
        self.isAdministrator = isAdministrator
    }
}

/// A list answer: `{"items": [...]}`.
package struct ListResponse<Item: Codable & Sendable>: Codable, Sendable {
    package var items: [Item]
    package init(items: [Item]) { self.items = items }
}

/// A container environment's schema in CloudKit's text format (`.ckdb`).
package struct SchemaDocument: Codable, Sendable, Hashable {
    package var text: String
    package init(text: String) { self.text = text }
}

/// `POST /admin/1/containers/{container}/schema/deploy`: copy development to production.
package struct SchemaDeployRequest: Codable, Sendable {
    /// Only report what would change.
    package var dryRun: Bool?
    package init(dryRun: Bool? = nil) { self.dryRun = dryRun }
}

/// What a deploy changes (or would), and what production refuses.
package struct SchemaDeployResponse: Codable, Sendable, Hashable {
    package var changes: [String]
    package var violations: [String]
    package var deployed: Bool

    package init(changes: [String], violations: [String], deployed: Bool) {
        self.changes = changes
        self.violations = violations
        self.deployed = deployed
    }
}

/// `POST /admin/1/keys`: register a server-to-server key (an EC P-256 public key in PEM) for a container.
package struct CreateServerKeyRequest: Codable, Sendable {
    package var container: String
    package var publicKey: String
    package var name: String?

    package init(container: String, publicKey: String, name: String? = nil) {
        self.container = container
        self.publicKey = publicKey
        self.name = name
    }
}

/// A server-to-server key: requests signed with its private key act as the administrator who created it,
/// in the container's public database.
package struct ServerKeyInfo: Codable, Sendable, Hashable {
    package var keyID: String
    package var container: String
    package var name: String
    package var creator: String
    package var revoked: Bool

    package init(keyID: String, container: String, name: String, creator: String, revoked: Bool) {
        self.keyID = keyID
        self.container = container
        self.name = name
        self.creator = creator
        self.revoked = revoked
    }
}

/// A custom security role of a container's environment and the accounts holding it.
package struct RoleInfo: Codable, Sendable, Hashable {
    package struct Member: Codable, Sendable, Hashable {
        package var userRecordName: String
        package var email: String
        package init(userRecordName: String, email: String) {
            self.userRecordName = userRecordName
            self.email = email
        }
    }

    package var role: String
    package var members: [Member]
    package init(role: String, members: [Member]) {
        self.role = role
        self.members = members
    }
}

/// Gives a role to the account with this email address.
package struct RoleMemberRequest: Codable, Sendable, Hashable {
    package var email: String
    package init(email: String) { self.email = email }
}
