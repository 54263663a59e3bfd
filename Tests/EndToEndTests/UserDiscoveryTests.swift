import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Users find each other (CloudKit's user discoverability) once they opt in, from the SDK and the CLI.
@Suite(.cleansUp) struct UserDiscoveryTests {
    @Test func aUserWhoOptsInIsFoundByEmailAndPhoneThroughTheSDK() async throws {
        let server = try await TestServer.start()
        do {
            let app = try await server.seedApp()
            let ann = try await server.signIn(email: "ann@example.com", device: "phone")
            let bob = try await server.signIn(email: "bob@example.com", device: "laptop")
            let annContainer = CloudContainer(identifier: app.container, session: ann, apiToken: app.apiToken)
            let lookups = [
                UserIdentity.LookupInfo(emailAddress: "bob@example.com"), UserIdentity.LookupInfo(phoneNumber: "+1 555 0100"),
            ]
            #expect(try await annContainer.discoverUserIdentities(lookups).isEmpty)

            #expect(try await NimbusAccount.profile(bob) == AccountProfile())
            let stored = try await NimbusAccount.updateProfile(
                bob, AccountProfile(firstName: "Bob", phoneNumber: "+1 555-0100", discoverable: true))
            #expect(stored.phoneNumber == "+15550100" && stored.discoverable)
            let found = try await annContainer.discoverUserIdentities(lookups)
            #expect(found.map(\.userRecordName) == [bob.userRecordName, bob.userRecordName])
            #expect(found.first?.nameComponents?.givenName == "Bob")
            #expect(try await annContainer.discoverAllUserIdentities().map(\.userRecordName) == [bob.userRecordName])
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }

    @Test func theCommandLineShowsAndChangesTheProfile() async throws {
        let server = try await TestServer.start()
        do {
            _ = try await server.seedApp()
            let config = TestServer.temporaryDirectory().path
            #expect(
                try await CommandLineTests.run(
                    ["signup", "--email", "cy@example.com", "--password", TestServer.password], server: server
                ).status == 0)
            #expect(
                try await CommandLineTests.run(
                    ["login", "--config", config, "--email", "cy@example.com", "--password", TestServer.password], server: server
                ).status == 0)
            let changed = try await CommandLineTests.run(
                [
                    "profile", "--config", config, "--first-name", "Cy", "--phone-number", "+33 1 23 45 67 89", "--discoverable",
                    "--json",
                ], server: server)
            #expect(changed.status == 0, "\(changed.stderr)")
            let profile = try JSONDecoder().decode(AccountProfile.self, from: Data(changed.stdout.utf8))
            #expect(profile == AccountProfile(firstName: "Cy", phoneNumber: "+33123456789", discoverable: true))
            let hidden = try await CommandLineTests.run(
                ["profile", "--config", config, "--no-discoverable", "--first-name", ""], server: server)
            #expect(hidden.stdout == "name: \nphone number: +33123456789\ndiscoverable: no\n", "\(hidden.stderr)")
            let bad = try await CommandLineTests.run(
                ["profile", "--config", config, "--phone-number", "call me"], server: server)
            #expect(bad.status == 1 && bad.stderr.contains("BAD_REQUEST"))
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }
}
