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
            print(client.json ? ValueText.json(["userRecordName": name]) : "Created account \(email) (\(name)).")
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
                session: session, email: email,
                apiToken: apiToken ?? Environment.string("NIMBUS_API_TOKEN") ?? previous?.apiToken,
                storeIdentifier: store ?? Environment.string("NIMBUS_STORE") ?? previous?.storeIdentifier,
                container: container ?? Environment.string("NIMBUS_CONTAINER") ?? previous?.container,
                deviceName: deviceName)
            try profile.save(to: client.configDirectory)
            print(
                client.json
                    ? ValueText.json(["userRecordName": session.userRecordName, "deviceID": session.deviceID])
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

struct Profile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Show or change your names, phone number and whether other users may discover you; manage app passwords.",
        discussion: """
            Other users find you (CloudKit's users/discover) by email, phone number or user record name only
            with --discoverable; --no-discoverable hides you again. Options not given keep their values.

            An app password signs one program in with HTTP Basic (a WebDAV client at /dav/, with your email as
            the user name); it is shown once. --app-passwords lists them, --revoke-app-password signs one out.
            Finder's own files (._name, .DS_Store) written through a password are kept out of sync unless it was
            made with --keep-finder-files.
            """)

    @OptionGroup var client: ClientOptions
    @Option(help: "Your first name (empty to remove it).") var firstName: String?
    @Option(help: "Your last name (empty to remove it).") var lastName: String?
    @Option(help: "Your phone number in international form, like +44 20 7946 0958 (empty to remove it).") var phoneNumber: String?
    @Flag(inversion: .prefixedNo, help: "Whether other users may discover you.") var discoverable: Bool?
    @Option(help: "Create an app password with this name (for a WebDAV client) and print it once.") var appPassword: String?
    @Flag(help: "With --app-password: store Finder's own files (._name, .DS_Store) as documents, not out of sync.")
    var keepFinderFiles = false
    @Flag(help: "List your app passwords.") var appPasswords = false
    @Option(help: "Revoke the app password with this name or device ID.") var revokeAppPassword: String?

    func run() async throws {
        do {
            let session = try client.profile().session
            if appPassword != nil || appPasswords || revokeAppPassword != nil {
                try await manageAppPasswords(session)
                return
            }
            var profile = try await NimbusAccount.profile(session)
            let changes = firstName != nil || lastName != nil || phoneNumber != nil || discoverable != nil
            if let firstName { profile.firstName = firstName.isEmpty ? nil : firstName }
            if let lastName { profile.lastName = lastName.isEmpty ? nil : lastName }
            if let phoneNumber { profile.phoneNumber = phoneNumber.isEmpty ? nil : phoneNumber }
            if let discoverable { profile.discoverable = discoverable }
            if changes { profile = try await NimbusAccount.updateProfile(session, profile) }
            if client.json {
                print(ValueText.json(profile))
            } else {
                print("name: \([profile.firstName, profile.lastName].compactMap { $0 }.joined(separator: " "))")
                print("phone number: \(profile.phoneNumber ?? "")")
                print("discoverable: \(profile.discoverable ? "yes" : "no")")
            }
        } catch {
            fail(error)
        }
    }

    private func manageAppPasswords(_ session: NimbusSession) async throws {
        if let name = appPassword {
            let created = try await NimbusAccount.createAppPassword(session, name: name, keepFinderFiles: keepFinderFiles)
            if client.json {
                print(ValueText.json(created))
            } else {
                print("user name: \(created.userName)")
                print("app password: \(created.password ?? "")")
                print("WebDAV: \(session.server.appendingPathComponent("dav").absoluteString)/")
            }
        }
        if let revoked = revokeAppPassword {
            let matching = try await NimbusAccount.appPasswords(session).filter { $0.name == revoked || $0.deviceID == revoked }
            guard !matching.isEmpty else { throw NimbusError.notFound("no app password named \(revoked)") }
            for password in matching { try await NimbusAccount.revokeAppPassword(session, deviceID: password.deviceID) }
            print("revoked \(matching.count) app password\(matching.count == 1 ? "" : "s")")
        }
        if appPasswords {
            let list = try await NimbusAccount.appPasswords(session)
            if client.json {
                print(ValueText.json(list))
            } else {
                for password in list { print("\(password.name)\t\(password.deviceID)") }
            }
        }
    }
}
