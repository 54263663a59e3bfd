import ArgumentParser
import Foundation
import NIOCore
import Logging
import NimbusCore
import NimbusDevice
import NimbusKit

struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device", abstract: "Keep this device's folder of iCloud documents in sync, in the background.",
        subcommands: [DeviceRun.self, DeviceStatusCommand.self, DeviceAdd.self])
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
        abstract: "Mirror each container at ROOT/Mobile Documents/<container, dots as tildes>/ until stopped.",
        discussion: """
            The containers are the login's (--container with its --api-token) and those added with \
            `nimbus device add`; --container mirrors just one of them.
            """)

    @OptionGroup var client: ClientOptions
    @Option(help: "Mirror only this container.")
    var container: String?
    @Option(help: "development or production.")
    var environment = "development"
    @Option(help: "The device's root folder.")
    var root: String
    @Option(help: "Seconds between safety-net rescans (changes are noticed at once through inotify and push).")
    var rescanSeconds = 30
    @Flag(help: "Download files only when asked for (nimbus docs download); until then each is a placeholder.")
    var onDemand = false

    func run() async throws {
        DeviceDaemon.tuneMemory()
        let profile = try client.profile()
        var containers = profile.documentContainers
        if let container {
            guard let token = containers[container] else {
                throw CLIError("this device has no API token for \(container): add it with `nimbus device add`")
            }
            containers = [container: token]
        }
        guard !containers.isEmpty else {
            throw CLIError(
                "no container to mirror: pass --api-token and --container to `nimbus login`, or use `nimbus device add`")
        }
        let rootURL = URL(fileURLWithPath: root)
        let state = rootURL.appendingPathComponent(".nimbus")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        var daemons: [DeviceDaemon] = []
        for (identifier, apiToken) in containers.sorted(by: { $0.key < $1.key }) {
            let client = DocumentClient(
                client: NimbusClient(session: profile.session, apiToken: apiToken), container: identifier,
                environment: environment)
            let directory = identifier.replacingOccurrences(of: ".", with: "~")
            // Each environment has its own folder: one folder for two would copy one's files into the other.
            let folderName = environment == "development" ? directory : "\(directory) (\(environment))"
            let folder = rootURL.appendingPathComponent("Mobile Documents").appendingPathComponent(folderName)
            let journal = try DeviceJournal(path: state.appendingPathComponent("\(directory).\(environment).sqlite").path)
            let engine = SyncEngine(
                client: client, folder: folder, journal: journal, device: profile.deviceName ?? ProcessInfo.processInfo.hostName,
                downloadsOnDemand: onDemand)
            daemons.append(
                DeviceDaemon(
                    engine: engine, folder: folder, session: profile.session, container: identifier,
                    rescanInterval: .seconds(max(1, rescanSeconds)), logger: Logger(label: "nimbus.device")))
            FileHandle.standardError.write(Data("syncing \(folder.path)\n".utf8))
        }
        try await DeviceHost(root: rootURL, daemons: daemons).run()
    }
}

struct DeviceAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Mirror one more container on this device, with its app's API token.")

    @OptionGroup var client: ClientOptions
    @Option(help: "The container, as an app's entitlements name it.")
    var container: String
    @Option(help: "An API token of an app entitled to the container.")
    var apiToken: String

    func run() async throws {
        guard var profile = try DeviceProfile.load(from: client.configDirectory) else {
            throw CLIError("not signed in: run `nimbus login` first")
        }
        // Asking for the container's changes proves the token opens it for this user.
        do {
            _ = try await DocumentClient(
                client: NimbusClient(session: profile.session, apiToken: apiToken), container: container
            ).changes(since: nil)
        } catch let error as NimbusError {
            throw CLIError("\(container) cannot be mirrored with that token: \(error.reason)")
        }
        var mirrored = profile.mirrored ?? [:]
        mirrored[container] = apiToken
        profile.mirrored = mirrored
        try profile.save(to: client.configDirectory)
        print("This device now mirrors \(profile.documentContainers.keys.sorted().joined(separator: ", ")).")
    }
}

struct DeviceStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Ask the running daemon how the folder stands, or why PATH is not synced yet.")

    @Argument(help: "A file or folder in the synced folder (default: the folder as a whole).")
    var path: String?
    @Option(help: "The device's root folder (default: found above PATH or the current directory).")
    var root: String?
    @Flag(help: "Print JSON for scripts.")
    var json = false

    func run() async throws {
        let response = try DeviceRoot.ask(.status, path: path, root: root)
        if json {
            print(ValueText.json(response))
        } else if let item = response.item {
            print("\(item.path): \(item.reason)")
        } else {
            for folder in response.folders ?? [] {
                print(folder.folder)
                print("  " + (folder.problem ?? (folder.pending == 0 ? "up to date" : "\(folder.pending) to do")))
                print("  \(folder.conflicts) in conflict, \(folder.refused) refused by the server")
            }
        }
    }
}

/// Finding the daemon that serves a path, and asking it.
enum DeviceRoot {
    /// Sends `command` about `path` (relative to the current directory; nil: the folder) to the daemon of
    /// `root`, or of the nearest device root above the path.
    static func ask(_ command: ControlRequest.Command, path: String?, root: String?, timeout: Int = 10) throws
        -> ControlResponse
    {
        let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let target = path.map { URL(fileURLWithPath: $0, relativeTo: here).standardizedFileURL }
        guard let rootURL = root.map({ URL(fileURLWithPath: $0) }) ?? Self.root(above: target ?? here) else {
            throw CLIError("no device root above \((target ?? here).path): pass --root (the folder given to nimbus device run)")
        }
        let response: ControlResponse
        do {
            response = try DaemonConnection.ask(
                ControlRequest(command: command, path: target?.path), at: ControlSocket.path(root: rootURL), timeout: timeout)
        } catch let error as NimbusError {
            throw CLIError(error.reason)
        }
        if let error = response.error { throw CLIError(error) }
        return response
    }

    /// The nearest folder at or above `url` that has a daemon's control socket.
    static func root(above url: URL) -> URL? {
        var current = url.standardizedFileURL
        while true {
            if FileManager.default.fileExists(atPath: ControlSocket.path(root: current).path) { return current }
            let parent = current.deletingLastPathComponent()
            if parent.path == current.path { return nil }
            current = parent
        }
    }
}

/// A file in a device's synced folder, asked about through its running daemon.
struct LocalItemOptions: ParsableArguments {
    @Argument(help: "The file, in the device's synced folder.")
    var path: String
    @Option(help: "The device's root folder (default: found above PATH).")
    var root: String?
    @Flag(help: "Print JSON for scripts.")
    var json = false

    /// Sends `command` for the file and prints where it stands after.
    func send(_ command: ControlRequest.Command, timeout: Int) throws {
        let item = try DeviceRoot.ask(command, path: path, root: root, timeout: timeout).item
        print(json ? ValueText.json(item) : "\(item?.path ?? path): \(item?.reason ?? "done")")
    }
}

struct DocsDownload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download", abstract: "Download an evicted file on this device (through its running daemon).")
    @OptionGroup var item: LocalItemOptions

    func run() async throws { try item.send(.download, timeout: 3600) }
}

struct DocsEvict: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict",
        abstract: "Free a synced file's space on this device, keeping a placeholder (through its running daemon).")
    @OptionGroup var item: LocalItemOptions

    func run() async throws { try item.send(.evict, timeout: 600) }
}

struct DocsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "docs", abstract: "List the container's documents, their versions, conflicts and Recently Deleted.",
        subcommands: [
            DocsList.self, DocsPut.self, DocsGet.self, DocsRemove.self, DocsMove.self, DocsVersions.self, DocsRestore.self,
            DocsConflicts.self, DocsResolve.self, DocsTrash.self, DocsDownload.self, DocsEvict.self,
        ])
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
    static let configuration = CommandConfiguration(
        commandName: "trash", abstract: "Recently Deleted: list it, or restore or purge an item (by ID or name).")
    @OptionGroup var options: ContainerOptions
    @Argument(help: "list, restore or purge.") var action = "list"
    @Argument(help: "The item's ID or name, for restore and purge.") var item: String?

    func run() async throws {
        let client = try options.documents().client
        let trash = try await client.trash()
        guard action != "list" else {
            if options.client.json {
                print(ValueText.json(trash))
                return
            }
            for item in trash.items { print("\(item.itemID)\t\(item.name)") }
            return
        }
        guard let kind = ["restore": DocumentOperation.Kind.restore, "purge": .purge][action] else {
            throw ValidationError("the action is list, restore or purge")
        }
        let matches = trash.items.filter { $0.itemID == item || $0.name == item }
        guard let found = matches.first else { throw CLIError("nothing like \(item ?? "that") in Recently Deleted") }
        guard matches.count == 1 else {
            throw CLIError(
                "several items in Recently Deleted are named \(found.name); give one's ID: "
                    + matches.map(\.itemID).joined(separator: ", "))
        }
        try await apply(DocumentOperation(kind, itemID: found.itemID), with: client, json: options.client.json)
    }
}

/// Sends one operation and prints what became of it; a failed one is an error.
private func apply(_ operation: DocumentOperation, with client: DocumentClient, json: Bool) async throws {
    let result = try await client.modify([operation], device: ProcessInfo.processInfo.hostName).results[0]
    if result.outcome == .failed {
        throw NimbusError(result.serverErrorCode ?? .internalError, result.reason ?? "the operation failed")
    }
    print(json ? ValueText.json(result) : "\(result.outcome.rawValue): \(result.item?.name ?? result.itemID)")
}

/// Where a path of the container goes: its parent folder's ID (nil at the root) and its name. Missing
/// folders are created when `creating`.
private func place(of path: String, in client: DocumentClient, creating: Bool) async throws -> (parent: String?, name: String) {
    let components = path.split(separator: "/").map(String.init)
    guard let name = components.last else { throw ValidationError("give a path inside the container, like Documents/Notes.txt") }
    var parent: String?
    var listed = try await listing(client)
    for depth in components.indices.dropLast() {
        let folderPath = components[...depth].joined(separator: "/")
        if let folder = listed.first(where: { $0.path == folderPath }) {
            guard folder.item.kind == .folder else { throw CLIError("\(folderPath) is not a folder") }
            parent = folder.item.itemID
            continue
        }
        guard creating else { throw CLIError("no folder \(folderPath)") }
        let id = UUIDString.random()
        try await apply(
            DocumentOperation(.save, itemID: id, parentID: parent, name: components[depth], kind: .folder), with: client,
            json: false)
        parent = id
        listed = try await listing(client)
    }
    return (parent, name)
}

struct DocsPut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put", abstract: "Upload a local file to PATH (a new version if it exists).")
    @OptionGroup var options: ContainerOptions
    @Argument var local: String
    @Argument var path: String

    func run() async throws {
        let client = try options.documents().client
        let file = URL(fileURLWithPath: local)
        var chunks: [DocumentChunk] = []
        let hash = try await FileContent.chunks(of: file) { bytes, chunk in
            chunks.append(DocumentChunk(hash: chunk, size: Int64(bytes.count)))
        }
        var missing = Set(try await client.missing(Array(Set(chunks.map(\.hash)))))
        let progress = TransferProgress("up", total: chunks.reduce(0) { $0 + $1.size })
        _ = try await FileContent.chunks(of: file) { bytes, chunk in
            if missing.remove(chunk) != nil { try await client.upload(chunk: ByteBuffer(bytes: bytes), hash: chunk) }
            progress.add(bytes.count)
        }
        progress.finish()
        let existing = try await listing(client).first { $0.path == path.trimmingCharacters(in: CharacterSet(charactersIn: "/")) }
        let (parent, name) = try await place(of: path, in: client, creating: true)
        let modified = (try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date) ?? Date()
        let content = DocumentContent(
            contentHash: hash, size: chunks.reduce(0) { $0 + $1.size }, chunks: chunks, modifiedAt: modified.milliseconds)
        try await apply(
            DocumentOperation(
                .save, itemID: existing?.item.itemID ?? UUIDString.random(), parentID: parent, name: name, kind: .file,
                baseContentHash: existing?.item.current?.content.contentHash, content: content), with: client,
            json: options.client.json)
    }
}

struct DocsGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Download PATH (or one of its versions) to a local file.")
    @OptionGroup var options: ContainerOptions
    @Argument var path: String
    @Argument var local: String
    @Option(help: "A version ID from `nimbus docs versions`.") var version: String?

    func run() async throws {
        let client = try options.documents().client
        let item = try await find(path, in: client)
        var wanted = item.current
        if let version {
            let all = try await client.versions(of: item.itemID)
            wanted = ([all.item.current].compactMap { $0 } + all.item.conflicts + all.history).first { $0.versionID == version }
        }
        guard let content = wanted?.content else { throw CLIError("\(path) has no version \(version ?? "")") }
        let target = URL(fileURLWithPath: local)
        let temporary = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).download")
        FileManager.default.createFile(atPath: temporary.path, contents: nil)
        let handle = try FileHandle(forWritingTo: temporary)
        do {
            let progress = TransferProgress("down", total: content.size)
            for chunk in content.chunks {
                let bytes = try await client.download(chunk: chunk.hash)
                try bytes.withUnsafeReadableBytes { try handle.write(contentsOf: $0) }
                progress.add(bytes.readableBytes)
            }
            progress.finish()
            try handle.synchronize()
            try handle.close()
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        guard try FileContent.hash(of: temporary) == content.contentHash, rename(temporary.path, target.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CLIError("the download of \(path) did not match its version; nothing was written")
        }
    }
}

struct DocsRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Move PATH to Recently Deleted.")
    @OptionGroup var options: ContainerOptions
    @Argument var path: String

    func run() async throws {
        let client = try options.documents().client
        let item = try await find(path, in: client)
        try await apply(
            DocumentOperation(.delete, itemID: item.itemID, baseContentHash: item.current?.content.contentHash), with: client,
            json: options.client.json)
    }
}

struct DocsMove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mv", abstract: "Rename or move PATH to NEW-PATH.")
    @OptionGroup var options: ContainerOptions
    @Argument var path: String
    @Argument var newPath: String

    func run() async throws {
        let client = try options.documents().client
        let item = try await find(path, in: client)
        let (parent, name) = try await place(of: newPath, in: client, creating: true)
        try await apply(
            DocumentOperation(.move, itemID: item.itemID, parentID: parent, name: name), with: client, json: options.client.json)
    }
}

/// A save that makes an earlier or conflict version's content the item's current one, as a new version
/// based on the current one.
private func saving(_ version: DocumentVersion, over item: DocumentItem) -> DocumentOperation {
    var content = version.content
    content.modifiedAt = Date().milliseconds
    return DocumentOperation(
        .save, itemID: item.itemID, parentID: item.parentID, name: item.name, kind: item.kind,
        baseContentHash: item.current?.content.contentHash, content: content)
}

struct DocsRestore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore", abstract: "Make an earlier version of PATH current again (as a new version).")
    @OptionGroup var options: ContainerOptions
    @Argument var path: String
    @Option(help: "A version ID from `nimbus docs versions`.") var version: String

    func run() async throws {
        let client = try options.documents().client
        let item = try await find(path, in: client)
        let all = try await client.versions(of: item.itemID)
        guard let earlier = (all.item.conflicts + all.history).first(where: { $0.versionID == version }) else {
            throw CLIError("\(path) has no earlier version \(version)")
        }
        try await apply(saving(earlier, over: item), with: client, json: options.client.json)
    }
}

struct DocsResolve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve", abstract: "Resolve PATH's conflict by keeping one version (current or a conflict version).")
    @OptionGroup var options: ContainerOptions
    @Argument var path: String
    @Option(help: "The version to keep, from `nimbus docs versions`.") var keep: String

    func run() async throws {
        let client = try options.documents().client
        var item = try await find(path, in: client)
        guard !item.conflicts.isEmpty else { throw CLIError("\(path) has no unresolved conflict") }
        if let chosen = item.conflicts.first(where: { $0.versionID == keep }) {
            let saved = try await client.modify([saving(chosen, over: item)]).results[0]
            guard let updated = saved.item, saved.outcome == .applied else {
                throw NimbusError(saved.serverErrorCode ?? .conflict, saved.reason ?? "\(path) changed; look again")
            }
            item = updated
        } else if item.current?.versionID != keep {
            throw CLIError("\(keep) is neither \(path)'s current version nor one of its conflict versions")
        }
        try await apply(
            DocumentOperation(.resolve, itemID: item.itemID, versionIDs: item.conflicts.map(\.versionID)), with: client,
            json: options.client.json)
    }
}
