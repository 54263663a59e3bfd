import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// `nimbus device run` on two device roots, and `nimbus docs`, as a user runs them.
@Suite(.cleansUp) struct DocumentCommandLineTests {
    @Test func twoDaemonsMirrorAFolderAndTheCLIListsIt() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let signup = try await CommandLineTests.run(
            ["signup", "--email", "ann@example.com", "--password", TestServer.password], server: server)
        #expect(signup.status == 0, "\(signup.stderr)")
        let devices = ["phone", "laptop"].map { name in
            (name: name, config: TestServer.temporaryDirectory().path, root: TestServer.temporaryDirectory())
        }
        for device in devices {
            let login = try await CommandLineTests.run(
                [
                    "login", "--config", device.config, "--email", "ann@example.com", "--password", TestServer.password,
                    "--device-name", device.name, "--api-token", app.apiToken, "--container", app.container,
                ], server: server)
            #expect(login.status == 0, "\(login.stderr)")
        }
        let folders = devices.map {
            $0.root.appendingPathComponent("Mobile Documents/iCloud~com~example~Cloudy/Documents")
        }
        let phone = try CommandLineTests.process(
            ["device", "run", "--config", devices[0].config, "--root", devices[0].root.path], server: server)
        let laptop = try CommandLineTests.process(
            ["device", "run", "--config", devices[1].config, "--root", devices[1].root.path], server: server)
        _ = try await phone.whileRunning { _ in
            _ = try await laptop.whileRunning { _ in
                try FileManager.default.createDirectory(at: folders[0], withIntermediateDirectories: true)
                try Data("Chapter one.".utf8).write(to: folders[0].appendingPathComponent("Novel.txt"))
                let arrived = folders[1].appendingPathComponent("Novel.txt")
                #expect(await eventually { FileManager.default.contents(atPath: arrived.path) == Data("Chapter one.".utf8) })
            }
        }
        let list = try await CommandLineTests.run(["docs", "ls", "--config", devices[1].config], server: server)
        #expect(list.status == 0 && list.stdout.contains("Documents/Novel.txt\t12"), "\(list.stdout)\(list.stderr)")
        let versions = try await CommandLineTests.run(
            ["docs", "versions", "--config", devices[1].config, "Documents/Novel.txt", "--json"], server: server)
        #expect(versions.status == 0 && versions.stdout.contains(#""history":[]"#), "\(versions.stdout)\(versions.stderr)")
        let missing = try await CommandLineTests.run(
            ["docs", "versions", "--config", devices[1].config, "Nope.txt"], server: server)
        #expect(missing.status != 0 && missing.stderr.contains("no document at Nope.txt"))
    }
}
