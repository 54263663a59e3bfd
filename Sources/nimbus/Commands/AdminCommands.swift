import ArgumentParser
import Foundation
import NimbusCore
import NimbusKit
import NimbusServer
import NIOHTTP1

struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage teams, apps, containers, entitlements and API tokens (as an administrator).",
        discussion: "Sign in with an administrator account first (`nimbus login`); `nimbus admin init` creates one.",
        subcommands: [
            AdminInit.self, AdminTeams.self, AdminApps.self, AdminContainers.self, AdminEntitle.self, AdminTokens.self,
            AdminUsers.self,
        ]
    )
}

/// Sends an admin request with the signed-in session and prints the answer.
struct AdminClient {
    let options: ClientOptions

    func send<Response: Codable>(_ method: HTTPMethod, _ path: String, body: (some Encodable)? = nil as Never?) async -> Response
    {
        do {
            let client = NimbusClient(session: try options.profile().session, apiToken: nil)
            return try await client.send(method, path, body: body)
        } catch {
            fail(error)
        }
    }

    func print<T: Encodable>(_ value: T, readable: () -> String) {
        if options.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            Swift.print(String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self))
        } else {
            Swift.print(readable())
        }
    }
}

struct AdminInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create an administrator in a data directory (works while the server is stopped or running).")

    @Option(help: "Data directory. [env: NIMBUS_DATA]") var data: String = Environment.string("NIMBUS_DATA") ?? "nimbus-data"
    @OptionGroup var database: StorageOptions
    @Option(help: "The administrator's email.") var email: String = "admin@nimbus.local"
    @Option(help: "Password; generated and printed when omitted.") var password: String?

    func run() async throws {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = URL(fileURLWithPath: data)
        do {
            configuration.storage = try database.storage()
            let server = try await NimbusServer(configuration: configuration)
            let chosen = password ?? Secrets.password()
            try await server.createAdministrator(email: email, password: chosen)
            print("Administrator \(email) created." + (password == nil ? " Password (shown once): \(chosen)" : ""))
        } catch {
            fail(error)
        }
    }
}

struct AdminTeams: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "teams", abstract: "List teams, or create one with --create NAME.")
    @OptionGroup var client: ClientOptions
    @Option(help: "Create a team with this name.") var create: String?
    @Option(help: "The new team's 10-character ID; generated when omitted.") var teamID: String?

    func run() async throws {
        let admin = AdminClient(options: client)
        if let name = create {
            let team: Team = await admin.send(.POST, "/admin/1/teams", body: CreateTeamRequest(teamID: teamID, name: name))
            admin.print(team) { "Created team \(team.name) with team ID \(team.teamID)." }
        } else {
            let list: ListResponse<Team> = await admin.send(.GET, "/admin/1/teams")
            admin.print(list) { list.items.map { "\($0.teamID)  \($0.name)" }.joined(separator: "\n") }
        }
    }
}

struct AdminApps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps", abstract: "List apps, or create one with --create BUNDLE_ID --team TEAMID.")
    @OptionGroup var client: ClientOptions
    @Option(help: "Create an app with this bundle ID.") var create: String?
    @Option(help: "The team the new app belongs to.") var team: String?
    @Option(help: "The key-value store identifier; TEAMID.bundleID when omitted.") var kvStore: String?

    func run() async throws {
        let admin = AdminClient(options: client)
        if let bundleID = create {
            guard let team else { fail(ValidationError("--team is required with --create")) }
            let app: App = await admin.send(
                .POST, "/admin/1/apps", body: CreateAppRequest(bundleID: bundleID, teamID: team, keyValueStoreIdentifier: kvStore)
            )
            admin.print(app) { "Created app \(app.bundleID); its key-value store is \(app.keyValueStoreIdentifier)." }
        } else {
            let list: ListResponse<App> = await admin.send(.GET, "/admin/1/apps")
            admin.print(list) {
                list.items.map {
                    "\($0.bundleID)  team \($0.teamID)  kv \($0.keyValueStoreIdentifier)  containers: \($0.containers.joined(separator: ", "))"
                }
                .joined(separator: "\n")
            }
        }
    }
}

struct AdminContainers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "containers", abstract: "List containers, or create one with --create iCloud.ID --team TEAMID.")
    @OptionGroup var client: ClientOptions
    @Option(help: "Create a container with this identifier.") var create: String?
    @Option(help: "The team the new container belongs to.") var team: String?
    @Option(
        help: ArgumentHelp(
            "Folder extensions its documents treat as file packages, comma-separated (default: key,numbers,pages,rtfd).",
            valueName: "extensions"))
    var packageExtensions: String?
    @Option(help: "Set --package-extensions of this existing container.") var set: String?

    func run() async throws {
        let admin = AdminClient(options: client)
        let extensions = packageExtensions.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        if let identifier = create {
            guard let team else { fail(ValidationError("--team is required with --create")) }
            let container: Container = await admin.send(
                .POST, "/admin/1/containers",
                body: Container(identifier: identifier, teamID: team, packageExtensions: extensions))
            admin.print(container) { "Created container \(container.identifier)." }
        } else if let identifier = set {
            guard let extensions else { fail(ValidationError("--package-extensions is required with --set")) }
            let container: Container = await admin.send(
                .PUT, "/admin/1/containers/\(identifier)/packages", body: PackageExtensionsRequest(packageExtensions: extensions))
            admin.print(container) {
                "\(container.identifier): packages are \(container.effectivePackageExtensions.joined(separator: ", "))"
            }
        } else {
            let list: ListResponse<Container> = await admin.send(.GET, "/admin/1/containers")
            admin.print(list) {
                list.items.map {
                    "\($0.identifier)  team \($0.teamID)  packages: \($0.effectivePackageExtensions.joined(separator: ","))"
                }
                .joined(separator: "\n")
            }
        }
    }
}

struct AdminEntitle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "entitle", abstract: "Add a container to an app's entitlements (--remove takes it away).")
    @OptionGroup var client: ClientOptions
    @Argument(help: "The app's bundle ID.") var bundleID: String
    @Argument(help: "The container identifier.") var container: String
    @Flag(help: "Remove the entitlement instead.") var remove = false

    func run() async throws {
        let admin = AdminClient(options: client)
        let encoded = container.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["."])) ?? container
        let app: App =
            remove
            ? await admin.send(.DELETE, "/admin/1/apps/\(bundleID)/entitlements/\(encoded)")
            : await admin.send(.POST, "/admin/1/apps/\(bundleID)/entitlements", body: EntitlementRequest(container: container))
        admin.print(app) { "\(app.bundleID) is entitled to: \(app.containers.joined(separator: ", "))" }
    }
}

struct AdminTokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens", abstract: "List API tokens, create one (--app --container), or revoke one (--revoke ID).")
    @OptionGroup var client: ClientOptions
    @Option(help: "Create a token for this app's bundle ID.") var app: String?
    @Option(help: "The container the new token is for.") var container: String?
    @Option(help: "A name for the new token.") var name: String?
    @Option(
        name: .customLong("origin"),
        help: "A web origin whose pages may use the new token, like https://app.example.com (repeatable; none: any).")
    var origins: [String] = []
    @Option(help: "Revoke the token with this ID.") var revoke: String?

    func run() async throws {
        let admin = AdminClient(options: client)
        if let revoke {
            do {
                try await NimbusClient(session: try client.profile().session, apiToken: nil).send(
                    .DELETE, "/admin/1/tokens/\(revoke)")
                print("Revoked token \(revoke).")
            } catch {
                fail(error)
            }
        } else if let app {
            guard let container else { fail(ValidationError("--container is required with --app")) }
            let created: CreatedAPIToken = await admin.send(
                .POST, "/admin/1/tokens",
                body: CreateAPITokenRequest(
                    container: container, bundleID: app, name: name, allowedOrigins: origins.isEmpty ? nil : origins))
            admin.print(created) { "API token for \(app) in \(container) (shown once):\n\(created.apiToken)" }
        } else {
            let list: ListResponse<APITokenInfo> = await admin.send(.GET, "/admin/1/tokens")
            admin.print(list) {
                list.items.map { "\($0.tokenID)  \($0.bundleID)  \($0.container)  \($0.name)\($0.revoked ? "  (revoked)" : "")" }
                    .joined(separator: "\n")
            }
        }
    }
}

struct AdminUsers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "users", abstract: "List accounts.")
    @OptionGroup var client: ClientOptions

    func run() async throws {
        let admin = AdminClient(options: client)
        let list: ListResponse<UserInfo> = await admin.send(.GET, "/admin/1/users")
        admin.print(list) {
            list.items.map { "\($0.userRecordName)  \($0.email)\($0.isAdministrator ? "  (administrator)" : "")" }.joined(
                separator: "\n")
        }
    }
}
