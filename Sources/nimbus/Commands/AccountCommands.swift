import ArgumentParser
import Foundation
import NimbusKit

struct SignUp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "signup", abstract: "Create an account.")

    @OptionGroup var client: ClientOptions
    @Option(help: "Email address.") var email: String
    @Option(help: "Password (or NIMBUS_PASSWORD, or standard input).") var password: String?

    func run() async throws {
        do {
            let name = try await NimbusAccount.signUp(
                server: try client.serverURL, email: email, password: try readPassword(password))
            print(client.json ? #"{"userRecordName":"\#(name)"}"# : "Created account \(email) (\(name)).")
        } catch {
            fail(error)
        }
    }
}

struct LogIn: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login", abstract: "Sign in and register this device; credentials go to the config directory.")

    @OptionGroup var client: ClientOptions
    @Option(help: "Email address.") var email: String
    @Option(help: "Password (or NIMBUS_PASSWORD, or standard input).") var password: String?
    @Option(help: "This device's name.") var deviceName: String = ProcessInfo.processInfo.hostName
    @Option(help: "The app's API token, for key-value commands. [env: NIMBUS_API_TOKEN]")
    var apiToken: String?
    @Option(help: "The key-value store identifier, TEAMID.bundleID. [env: NIMBUS_STORE]")
    var store: String?
    @Option(help: "The container record commands use, like iCloud.com.example.App. [env: NIMBUS_CONTAINER]")
    var container: String?

    func run() async throws {
        do {
            let previous = try DeviceProfile.load(from: client.configDirectory)
            let session = try await NimbusAccount.signIn(
                server: try client.serverURL, email: email, password: try readPassword(password), deviceName: deviceName,
                deviceID: previous?.session.deviceID)
            let profile = DeviceProfile(
                session: session, email: email, apiToken: apiToken ?? Environment.string("NIMBUS_API_TOKEN") ?? previous?.apiToken,
                storeIdentifier: store ?? Environment.string("NIMBUS_STORE") ?? previous?.storeIdentifier,
                container: container ?? Environment.string("NIMBUS_CONTAINER") ?? previous?.container)
            try profile.save(to: client.configDirectory)
            print(
                client.json
                    ? #"{"userRecordName":"\#(session.userRecordName)","deviceID":"\#(session.deviceID)"}"#
                    : "Signed in as \(email) on device \(deviceName) (\(session.deviceID)).")
        } catch {
            fail(error)
        }
    }
}

struct LogOut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "logout", abstract: "Revoke this device's session.")

    @OptionGroup var client: ClientOptions

    func run() async throws {
        do {
            let profile = try client.profile()
            try await NimbusAccount.signOut(profile.session)
            try FileManager.default.removeItem(at: client.configDirectory.appendingPathComponent(DeviceProfile.fileName))
            print("Signed out.")
        } catch {
            fail(error)
        }
    }
}
