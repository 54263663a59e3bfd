import ArgumentParser
import Foundation
import NimbusCore
import NimbusKit

struct KeyValueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kv", abstract: "Read, write and watch the iCloud key-value store of the signed-in user.",
        subcommands: [KVSet.self, KVGet.self, KVList.self, KVRemove.self, KVWatch.self])
}

/// Options of every `nimbus kv` command: the device and which store.
struct StoreOptions: ParsableArguments {
    @OptionGroup var client: ClientOptions
    @Option(help: "The key-value store identifier, TEAMID.bundleID (default: the one given at login). [env: NIMBUS_STORE]")
    var store: String?

    /// Opens this device's local copy of the store.
    func open() throws -> UbiquitousKeyValueStore {
        let profile = try client.profile()
        guard let apiToken = profile.apiToken else {
            throw CLIError("no API token: pass --api-token to `nimbus login` or set NIMBUS_API_TOKEN")
        }
        guard let identifier = store ?? profile.storeIdentifier else {
            throw CLIError("no store: pass --store, or --store to `nimbus login`, or set NIMBUS_STORE")
        }
        return try UbiquitousKeyValueStore(
            configuration: .init(
                session: profile.session, apiToken: apiToken, storeIdentifier: identifier,
                localDirectory: client.configDirectory.appendingPathComponent("kv")))
    }

    /// The store after a round trip with the server (or this device's copy, with a warning, when offline).
    func openSynchronized() async throws -> UbiquitousKeyValueStore {
        let store = try open()
        let fresh = await store.synchronize()
        store.close()
        if !fresh { FileHandle.standardError.write(Data("offline: showing this device's copy\n".utf8)) }
        return store
    }

    /// Applies a local write to `key` and uploads it before returning. Exits 1 when the write breaks a
    /// limit (nothing was saved), and with `pendingExitCode` when it is saved but not yet uploaded.
    func write(key: String, _ change: (UbiquitousKeyValueStore) -> Void) async throws {
        let store = try open()
        let events = store.changes()
        change(store)
        let uploaded = await store.synchronize()
        store.close()
        for await event in events where event.reason == .quotaViolationChange && event.changedKeys.contains(key) {
            fail(NimbusError(.kvLimitExceeded, "the write to \"\(key)\" breaks a key-value store limit and was not saved"))
        }
        guard uploaded else {
            FileHandle.standardError.write(
                Data("saved on this device; it uploads when the server is reachable (run any kv command)\n".utf8))
            throw ExitCode(pendingExitCode)
        }
    }
}

/// Exit status when a write is saved locally but could not reach the server yet (EX_TEMPFAIL).
let pendingExitCode: Int32 = 75

struct KVSet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Set a key (uploads before returning).")
    @OptionGroup var options: StoreOptions
    @Argument var key: String
    @Argument var value: String
    @Option(help: "Value type: \(ValueType.allCases.map(\.rawValue).joined(separator: ", ")).") var type: ValueType = .string

    func run() async throws {
        let parsed = try type.parse(value)
        try await options.write(key: key) { $0.set(parsed, forKey: key) }
        print(options.client.json ? ValueText.json([key: parsed]) : ValueText.line(key: key, value: parsed))
    }
}

struct KVGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a key's value.")
    @OptionGroup var options: StoreOptions
    @Argument var key: String

    func run() async throws {
        let store = try await options.openSynchronized()
        guard let value = store.object(forKey: key) else {
            FileHandle.standardError.write(Data("no value for \"\(key)\"\n".utf8))
            throw ExitCode(1)
        }
        print(options.client.json ? ValueText.json(value) : ValueText.readable(value))
    }
}

struct KVList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Print every key and value.")
    @OptionGroup var options: StoreOptions

    func run() async throws {
        let values = try await options.openSynchronized().dictionaryRepresentation
        if options.client.json {
            print(ValueText.json(values))
        } else {
            for key in values.keys.sorted() { print(ValueText.line(key: key, value: values[key]!)) }
        }
    }
}

struct KVRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a key (uploads before returning).")
    @OptionGroup var options: StoreOptions
    @Argument var key: String

    func run() async throws {
        try await options.write(key: key) { $0.removeObject(forKey: key) }
        print(options.client.json ? ValueText.json(["removed": key]) : "removed \(key)")
    }
}

struct KVWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Print change events as they arrive (until interrupted).")
    @OptionGroup var options: StoreOptions

    func run() async throws {
        let store = try options.open()
        let events = store.changes()
        store.start()
        for await event in events {
            let values = event.changedKeys.map { key in (key, store.object(forKey: key)) }
            let line: String
            if options.client.json {
                line = ValueText.json(
                    WatchedChange(
                        reason: "\(event.reason)", changedKeys: event.changedKeys,
                        values: Dictionary(values, uniquingKeysWith: { first, _ in first })))
            } else {
                line =
                    "\(event.reason): "
                    + values.map { key, value in "\(key) = \(value.map(ValueText.readable) ?? "(removed)")" }
                    .joined(separator: ", ")
            }
            // Unbuffered, so a pipe sees each event as it happens.
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }
}

/// A change event as `nimbus kv watch --json` prints it; a removed key's value is null.
private struct WatchedChange: Encodable {
    var reason: String
    var changedKeys: [String]
    var values: [String: KeyValue?]
}
