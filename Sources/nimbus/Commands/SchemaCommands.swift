import ArgumentParser
import Foundation
import NimbusCore
import NimbusKit

struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Export, import, compare and deploy a container's schema (as an administrator).",
        discussion: """
            Schemas use CloudKit's text format (DEFINE SCHEMA, RECORD TYPE, QUERYABLE/SORTABLE/SEARCHABLE, GRANT). \
            Queries on system fields need their index declared ("___createTime" TIMESTAMP SORTABLE); importing or \
            deploying it indexes the records already stored.
            """,
        subcommands: [SchemaExport.self, SchemaImport.self, SchemaDiffCommand.self, SchemaDeploy.self, SchemaRoles.self])
}

/// Options of the schema commands: an administrator's device and the container.
struct SchemaOptions: ParsableArguments {
    @OptionGroup var client: ClientOptions
    @Option(help: "The container, like iCloud.com.example.App (default: the one given at login). [env: NIMBUS_CONTAINER]")
    var container: String?

    var admin: AdminClient { AdminClient(options: client) }

    var path: String {
        get throws { try containerPath + "/schema" }
    }

    var containerPath: String {
        get throws {
            let signedIn = try client.profile().container
            guard let identifier = container ?? Environment.string("NIMBUS_CONTAINER") ?? signedIn else {
                throw CLIError("no container: pass --container, or --container to `nimbus login`, or set NIMBUS_CONTAINER")
            }
            return "/admin/1/containers/\(identifier)"
        }
    }
}

struct SchemaRoles: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roles",
        abstract:
            "List the custom security roles (CREATE ROLE) and who holds them; give one (--give ROLE --email E) or take one (--take ROLE --email E).",
        discussion: "A role's GRANTs apply in the public database to the accounts holding it.")
    @OptionGroup var options: SchemaOptions
    @Option(help: "development or production.") var environment: String = "development"
    @Option(help: "Give this role to the account with --email.") var give: String?
    @Option(help: "Take this role from the account with --email.") var take: String?
    @Option(help: "The account's email address.") var email: String?

    func run() async throws {
        let roles = try options.containerPath + "/roles/\(environment)"
        let list: ListResponse<RoleInfo>
        switch (give, take, email) {
        case (let role?, nil, let email?):
            list = await options.admin.send(.POST, roles + "/\(role)/members", body: RoleMemberRequest(email: email))
        case (nil, let role?, let email?):
            let current: ListResponse<RoleInfo> = await options.admin.send(.GET, roles)
            guard
                let holder = current.items.first(where: { $0.role == role })?.members.first(where: {
                    $0.email == email.lowercased()
                })
            else {
                fail(CLIError("\(email) does not hold role \(role) in \(environment)"))
            }
            do {
                try await NimbusClient(session: try options.client.profile().session, apiToken: nil).send(
                    .DELETE, roles + "/\(role)/members/\(holder.userRecordName)")
            } catch {
                fail(error)
            }
            list = await options.admin.send(.GET, roles)
        case (nil, nil, nil):
            list = await options.admin.send(.GET, roles)
        default:
            fail(ValidationError("use --give ROLE --email E, or --take ROLE --email E, or neither"))
        }
        options.admin.print(list) {
            list.items.map { "\($0.role): \($0.members.isEmpty ? "(nobody)" : $0.members.map(\.email).joined(separator: ", "))" }
                .joined(separator: "\n")
        }
    }
}

struct SchemaExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export", abstract: "Print an environment's schema.")
    @OptionGroup var options: SchemaOptions
    @Option(help: "development or production.") var environment: String = "development"

    func run() async throws {
        let document: SchemaDocument = await options.admin.send(.GET, try options.path + "/\(environment)")
        options.admin.print(document) { document.text }
    }
}

struct SchemaImport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Replace the development schema with a file's (it may only add types, fields and indexes).")
    @OptionGroup var options: SchemaOptions
    @Argument(help: "A .ckdb file.") var file: String

    func run() async throws {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            fail(CLIError("cannot read \(file): \(error.localizedDescription)"))
        }
        let document: SchemaDocument = await options.admin.send(
            .PUT, try options.path + "/development", body: SchemaDocument(text: text))
        options.admin.print(document) { "Imported into development:\n" + document.text }
    }
}

struct SchemaDiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "Print what deploying development to production would change, and what it would refuse.")
    @OptionGroup var options: SchemaOptions

    func run() async throws {
        let diff: SchemaDeployResponse = await options.admin.send(
            .POST, try options.path + "/deploy", body: SchemaDeployRequest(dryRun: true))
        options.admin.print(diff) { SchemaDeploy.describe(diff) }
        if !diff.violations.isEmpty { throw ExitCode(1) }
    }
}

struct SchemaDeploy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deploy", abstract: "Deploy the development schema to production: prints the diff, then applies it.",
        discussion: "Production is additive-only: removals and type changes are refused and nothing is deployed.")
    @OptionGroup var options: SchemaOptions

    func run() async throws {
        let diff: SchemaDeployResponse = await options.admin.send(
            .POST, try options.path + "/deploy", body: SchemaDeployRequest(dryRun: true))
        if !options.client.json { print(Self.describe(diff)) }
        guard diff.violations.isEmpty else { throw ExitCode(1) }
        let deployed: SchemaDeployResponse = await options.admin.send(
            .POST, try options.path + "/deploy", body: SchemaDeployRequest())
        options.admin.print(deployed) { "Deployed to production." }
    }

    static func describe(_ diff: SchemaDeployResponse) -> String {
        var lines = diff.changes.isEmpty ? ["No changes: production matches development."] : diff.changes
        lines += diff.violations.map { "refused: \($0)" }
        return lines.joined(separator: "\n")
    }
}
