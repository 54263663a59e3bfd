import ArgumentParser
import Foundation
import Logging
import NimbusCore
import NimbusDevice
import NimbusKit

struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device", abstract: "Keep this device's folder of iCloud documents in sync, in the background.",
        subcommands: [DeviceRun.self])
}

/// Options of the document commands: the device and which container.
struct ContainerOptions: ParsableArguments {
    @OptionGroup var client: ClientOptions
    @Option(help: "The container (default: the one given at login). [env: NIMBUS_CONTAINER]")
    var container: String?
    @Option(help: "development or production.")
    var environment = "development"

    func documents() throws -> (client: DocumentClient, profile: DeviceProfile) {
        let profile = try client.profile()
        guard let apiToken = profile.apiToken else {
            throw CLIError("no API token: pass --api-token to `nimbus login` or set NIMBUS_API_TOKEN")
        }
        guard let container = container ?? profile.container ?? Environment.string("NIMBUS_CONTAINER") else {
            throw CLIError("no container: pass --container, or --container to `nimbus login`")
        }
        return (
            DocumentClient(
                client: NimbusClient(session: profile.session, apiToken: apiToken), container: container,
                environment: environment), profile
        )
    }
}

struct DeviceRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Mirror the container at ROOT/Mobile Documents/<container, dots as tildes>/ until stopped.")

    @OptionGroup var options: ContainerOptions
    @Option(help: "The device's root folder.")
    var root: String
    @Option(help: "Seconds between safety-net rescans (changes are noticed at once through inotify and push).")
    var rescanSeconds = 30

    func run() async throws {
        let (client, profile) = try options.documents()
        let rootURL = URL(fileURLWithPath: root)
        let directory = client.container.replacingOccurrences(of: ".", with: "~")
        let folder = rootURL.appendingPathComponent("Mobile Documents").appendingPathComponent(directory)
        let state = rootURL.appendingPathComponent(".nimbus")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let journal = try DeviceJournal(path: state.appendingPathComponent("\(directory).\(options.environment).sqlite").path)
        let device = ProcessInfo.processInfo.hostName
        let engine = SyncEngine(client: client, folder: folder, journal: journal, device: device)
        let daemon = DeviceDaemon(
            engine: engine, folder: folder, session: profile.session, container: client.container,
            rescanInterval: .seconds(max(1, rescanSeconds)), logger: Logger(label: "nimbus.device"))
        FileHandle.standardError.write(Data("syncing \(folder.path)\n".utf8))
        try await daemon.run()
    }
}

struct DocsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docs", abstract: "List the container's documents, their versions, conflicts and Recently Deleted.",
        subcommands: [DocsList.self, DocsVersions.self, DocsConflicts.self, DocsTrash.self])
}

/// Every live item of the container, with its path.
private func listing(_ client: DocumentClient) async throws -> [(path: String, item: DocumentItem)] {
    var items: [String: DocumentItem] = [:]
    var token: String?
    while true {
        let page = try await client.changes(since: token)
        for item in page.items { items[item.itemID] = item.deletedAt == nil ? item : nil }
        for id in page.removed { items[id] = nil }
        token = page.syncToken
        if !page.moreComing { break }
    }
    func path(_ item: DocumentItem) -> String {
        var components = [item.name]
        var parent = item.parentID
        while let id = parent, let folder = items[id], components.count <= DocumentNames.maxDepth {
            components.insert(folder.name, at: 0)
            parent = folder.parentID
        }
        return components.joined(separator: "/")
    }
    return items.values.map { (path($0), $0) }.sorted { $0.path < $1.path }
}

private func find(_ path: String, in client: DocumentClient) async throws -> DocumentItem {
    let trimmed = path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
    guard let found = try await listing(client).first(where: { $0.path == trimmed }) else {
        throw CLIError("no document at \(path)")
    }
    return found.item
}

struct DocsList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List documents (under PATH).")
    @OptionGroup var options: ContainerOptions
    @Argument var path: String = ""

    func run() async throws {
        let prefix = path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let entries = try await listing(try options.documents().client).filter {
            prefix.isEmpty || $0.path == prefix || $0.path.hasPrefix(prefix + "/")
        }
        if options.client.json {
            print(ValueText.json(entries.map { DocumentListing(path: $0.path, item: $0.item) }))
            return
        }
        for (path, item) in entries {
            let size = item.current.map { "\($0.content.size)" } ?? "-"
            let flags =
                (item.conflicts.isEmpty ? "" : "  [\(item.conflicts.count) conflict(s)]")
                + (item.nameIssues.isEmpty ? "" : "  [name: \(item.nameIssues.joined(separator: "; "))]")
            print("\(item.kind == .folder ? path + "/" : path)\t\(size)\(flags)")
        }
    }
}

struct DocumentListing: Encodable {
    var path: String
    var item: DocumentItem
}

struct DocsVersions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "versions", abstract: "A document's versions.")
    @OptionGroup var options: ContainerOptions
    @Argument var path: String

    func run() async throws {
        let client = try options.documents().client
        let versions = try await client.versions(of: try await find(path, in: client).itemID)
        if options.client.json {
            print(ValueText.json(versions))
            return
        }
        let rows =
            [versions.item.current.map { ("current", $0) }].compactMap { $0 } + versions.item.conflicts.map { ("conflict", $0) }
            + versions.history.map { ("earlier", $0) }
        for (role, version) in rows {
            let saved = Date(timeIntervalSince1970: Double(version.savedAt) / 1000)
            print("\(version.versionID)\t\(role)\t\(version.content.size) bytes\t\(version.device)\t\(saved)")
        }
    }
}

struct DocsConflicts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts", abstract: "Documents with unresolved conflict versions.")
    @OptionGroup var options: ContainerOptions

    func run() async throws {
        let entries = try await listing(try options.documents().client).filter { !$0.item.conflicts.isEmpty }
        if options.client.json {
            print(ValueText.json(entries.map { DocumentListing(path: $0.path, item: $0.item) }))
            return
        }
        for (path, item) in entries {
            print("\(path)\t" + item.conflicts.map { "\($0.versionID) (\($0.device))" }.joined(separator: ", "))
        }
    }
}

struct DocsTrash: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "trash", abstract: "Recently Deleted.")
    @OptionGroup var options: ContainerOptions

    func run() async throws {
        let trash = try await options.documents().client.trash()
        if options.client.json {
            print(ValueText.json(trash))
            return
        }
        for item in trash.items { print("\(item.itemID)\t\(item.name)") }
    }
}
