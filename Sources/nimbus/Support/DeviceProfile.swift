import ArgumentParser
import Foundation
import NimbusCore
import NimbusKit

/// One device's credentials and local state, kept in its config directory (`--config`, `NIMBUS_CONFIG`).
///
/// Two config directories are two devices, so several can run side by side on one machine.
struct DeviceProfile: Codable {
    var session: NimbusSession
    var email: String
    var apiToken: String?
    var storeIdentifier: String?
    /// The container record commands use unless told another.
    var container: String?
    /// More containers `nimbus device run` mirrors, each with its app's API token (`nimbus device add`).
    var mirrored: [String: String]?
    /// The name the device signed in with: the versions it saves say they come from it.
    var deviceName: String?

    /// Every container this device mirrors, with the API token for it.
    var documentContainers: [String: String] {
        var containers = mirrored ?? [:]
        if let container, let apiToken { containers[container] = apiToken }
        return containers
    }

    static let fileName = "credentials.json"

    static func load(from directory: URL) throws -> DeviceProfile? {
        let file = directory.appendingPathComponent(fileName)
        guard let data = try? Data(contentsOf: file) else { return nil }
        return try JSONDecoder().decode(DeviceProfile.self, from: data)
    }

    /// Writes the profile readable by its owner only from the start (the session token is a password):
    /// to a new file created with those permissions, then renamed over the old one.
    func save(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent(Self.fileName)
        let temporary = directory.appendingPathComponent(".\(Self.fileName).\(UUIDString.random())")
        let bytes = try JSONEncoder().encode(self)
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw CLIError("cannot create \(temporary.path): \(String(cString: strerror(errno)))") }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced, rename(temporary.path, file.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CLIError("cannot replace \(file.path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Options every client command shares.
struct ClientOptions: ParsableArguments {
    @Option(help: "This device's config directory: credentials and local state. [env: NIMBUS_CONFIG]")
    var config: String = Environment.string("NIMBUS_CONFIG") ?? (NSHomeDirectory() + "/.config/nimbus")

    @Option(help: "Server URL. [env: NIMBUS_SERVER]")
    var server: String = Environment.string("NIMBUS_SERVER") ?? "http://127.0.0.1:8080"

    @Flag(help: "Print JSON for scripts.")
    var json = false

    @Option(
        help:
            "A certificate authority (PEM) to trust besides the system's, for a server with a private one. [env: NIMBUS_CA_FILE]")
    var caFile: String? = Environment.string("NIMBUS_CA_FILE")

    @Flag(help: "For tests only: accept any server certificate, so anyone on the network can read and change what is sent.")
    var insecure = false

    var configDirectory: URL { URL(fileURLWithPath: config) }

    /// Checks the CA file and makes the trust the process's, before any client is made.
    func validate() throws {
        if let caFile {
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw ValidationError("--ca-file \(caFile) cannot be read")
            }
            ServerTrust.processDefault = .certificateAuthority(pemFile: URL(fileURLWithPath: caFile))
        }
        if insecure {
            FileHandle.standardError.write(
                Data("warning: --insecure: the server's certificate is not checked; use it for tests only\n".utf8))
            ServerTrust.processDefault = .insecureForTestingOnly
        }
    }

    var serverURL: URL {
        get throws {
            guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
                throw ValidationError("--server must be an http or https URL, like http://127.0.0.1:8080")
            }
            return url
        }
    }

    /// The signed-in profile, or an error telling the user to sign in.
    func profile() throws -> DeviceProfile {
        if let token = Environment.string("NIMBUS_SESSION_TOKEN") {
            return DeviceProfile(
                session: NimbusSession(
                    server: try serverURL, sessionToken: token, userRecordName: Environment.string("NIMBUS_USER") ?? "",
                    deviceID: Environment.string("NIMBUS_DEVICE_ID") ?? "", expiresAt: .distantFuture),
                email: "", apiToken: Environment.string("NIMBUS_API_TOKEN"), storeIdentifier: Environment.string("NIMBUS_STORE"),
                container: Environment.string("NIMBUS_CONTAINER"))
        }
        guard var profile = try DeviceProfile.load(from: configDirectory) else {
            throw CLIError("not signed in on this device (\(config)); run `nimbus login` first")
        }
        if let token = Environment.string("NIMBUS_API_TOKEN") { profile.apiToken = token }
        if let store = Environment.string("NIMBUS_STORE") { profile.storeIdentifier = store }
        return profile
    }
}

/// Reads a password from the option, the environment, or standard input.
func readPassword(_ option: String?) throws -> String {
    if let option { return option }
    if let password = Environment.string("NIMBUS_PASSWORD") { return password }
    if isatty(STDIN_FILENO) != 0, let typed = getpass("Password: ") { return String(cString: typed) }
    guard let line = readLine(strippingNewline: true), !line.isEmpty else {
        throw CLIError("no password: pass --password, set NIMBUS_PASSWORD, or type it on standard input")
    }
    return line
}

/// Prints an error the way the server said it, and exits non-zero.
func fail(_ error: any Error) -> Never {
    if let error = error as? NimbusError {
        FileHandle.standardError.write(Data("error: \(error.code): \(error.reason)\n".utf8))
    } else {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    }
    exit(1)
}

/// A run-time failure of a command, printed without the usage text that argument errors get.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
