import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import NimbusTestingCore
import Testing

/// The reference deployment as `scripts/deploy-local` starts it (a PostgreSQL primary and its synchronous
/// standby, SeaweedFS, three nodes, haproxy), set up the way the README tells an administrator, then
/// broken under load: a node killed, then the primary's machine lost and the standby promoted. Devices
/// through the balancer go on, and no write any of them was told succeeded is lost.
@Suite(.cleansUp) struct ReferenceDeploymentTests {
    /// The deployment's `deployment.env`, as variables.
    struct Deployment {
        let folder: URL
        let values: [String: String]

        var url: URL { URL(string: values["NIMBUS_URL"]!)! }

        func processID(_ part: String) throws -> Int32 {
            let text = try String(contentsOf: folder.appendingPathComponent("pids/\(part).pid"), encoding: .utf8)
            return try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/deploy-local")

    static func deployLocal(_ arguments: [String]) async throws -> ChildProcess.Output {
        try await ChildProcess(
            executable: URL(fileURLWithPath: "/bin/bash"), arguments: [script.path] + arguments,
            environment: CommandLineTests.environment(server: nil)
        ).run()
    }

    static func start() async throws -> Deployment {
        // Several nodes and two database servers: admitted as the other many-node tests are (freed once the
        // deployment has stopped, as cleanups run newest first).
        if let resources = TestResources.current {
            await TestAdmission.severalNodes.enter()
            resources.onCleanup { TestAdmission.severalNodes.leave() }
        }
        // Under the temporary folder: as root, PostgreSQL runs as `postgres`, which must reach it.
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nimbus-deployment-\(UUID())")
        TestResources.current?.onCleanup {
            _ = try? await deployLocal(["stop", "--folder", folder.path])
            try? FileManager.default.removeItem(at: folder)
        }
        let started = try await deployLocal(["start", "--folder", folder.path, "--nimbus", try CommandLineTests.executable.path])
        try #require(started.status == 0, "\(started.stdout)\(started.stderr)")
        let text = try String(contentsOf: folder.appendingPathComponent("deployment.env"), encoding: .utf8)
        var values = [String: String]()
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...]).trimmingCharacters(
                in: CharacterSet(charactersIn: "\""))
        }
        return Deployment(folder: folder, values: values)
    }

    /// The README's administrator steps, through the balancer: a team, an app, a container, a token.
    static func seedApp(_ deployment: Deployment) async throws -> (apiToken: String, store: String) {
        let admin = TestServer.temporaryDirectory().path
        func nimbus(_ arguments: [String]) async throws -> String {
            let output = try await ChildProcess(
                executable: try CommandLineTests.executable, arguments: arguments,
                environment: CommandLineTests.environment(server: deployment.url.absoluteString)
            ).run()
            try #require(output.status == 0, "nimbus \(arguments.joined(separator: " ")): \(output.stderr)")
            return output.stdout
        }
        _ = try await nimbus([
            "login", "--config", admin, "--email", "admin@nimbus.local", "--password", deployment.values["ADMIN_PASSWORD"]!,
        ])
        _ = try await nimbus(["admin", "teams", "--config", admin, "--create", "Example", "--team-id", "98Z3R5XU29"])
        _ = try await nimbus(["admin", "apps", "--config", admin, "--create", "com.example.Cloudy", "--team", "98Z3R5XU29"])
        _ = try await nimbus([
            "admin", "containers", "--config", admin, "--create", "iCloud.com.example.Cloudy", "--team", "98Z3R5XU29",
        ])
        _ = try await nimbus(["admin", "entitle", "--config", admin, "com.example.Cloudy", "iCloud.com.example.Cloudy"])
        let token = try await nimbus([
            "admin", "tokens", "--config", admin, "--app", "com.example.Cloudy", "--container", "iCloud.com.example.Cloudy",
            "--json",
        ])
        return (try JSONDecoder().decode(CreatedAPIToken.self, from: Data(token.utf8)).apiToken, "98Z3R5XU29.com.example.Cloudy")
    }

    @Test func aKilledNodeAndALostPrimaryLoseNoAcknowledgedWrite() async throws {
        let deployment = try await Self.start()
        let (apiToken, store) = try await Self.seedApp(deployment)
        try await NimbusAccount.signUp(server: deployment.url, email: "ann@example.com", password: TestServer.password)
        var clients = [KeyValueClient]()
        for device in ["phone", "laptop"] {
            let session = try await NimbusAccount.signIn(
                server: deployment.url, email: "ann@example.com", password: TestServer.password, deviceName: device)
            clients.append(KeyValueClient(client: NimbusClient(session: session, apiToken: apiToken), storeIdentifier: store))
        }
        let writers = NodeFaultTests.Writers(clients)
        #expect(await eventually(timeout: .seconds(30)) { writers.acknowledgedCount >= 20 }, "\(writers.refused.prefix(3))")

        kill(try deployment.processID("node2"), SIGKILL)
        let afterKill = writers.acknowledgedCounts
        #expect(
            await eventually(timeout: .seconds(60)) {
                let counts = writers.acknowledgedCounts
                return (0..<2).allSatisfy { counts[$0] > afterKill[$0] + 20 }
            }, "both devices go on through the other nodes: \(writers.acknowledgedCounts) from \(afterKill)")

        let failover = try await Self.deployLocal(["failover", "--folder", deployment.folder.path])
        try #require(failover.status == 0, "\(failover.stdout)\(failover.stderr)")
        let afterFailover = writers.acknowledgedCounts
        #expect(
            await eventually(timeout: .seconds(60)) {
                let counts = writers.acknowledgedCounts
                return (0..<2).allSatisfy { counts[$0] > afterFailover[$0] + 20 }
            }, "both devices write to the promoted standby: \(writers.acknowledgedCounts) from \(afterFailover)")
        await writers.stop()

        for (_, error) in writers.refused {
            // Told to try again, or (a request the killed node held) the connection lost: never a server error.
            #expect(
                [.tryAgainLater, .networkUnavailable].contains(error.code), "\(error.code): \(error.reason)")
        }
        let stored = try await clients[0].values().values
        #expect(writers.lost(in: stored).isEmpty, "acknowledged writes lost: \(writers.lost(in: stored))")

        // The operator's backup, with the deployment's own settings: it reaches the promoted standby through
        // the URL that still lists the lost primary first.
        var environment = CommandLineTests.environment(server: nil)
        for key in ["NIMBUS_DATABASE", "NIMBUS_BLOBS", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
            environment[key] = deployment.values[key]
        }
        let backups = TestServer.temporaryDirectory().path
        let backup = try await ChildProcess(
            executable: try CommandLineTests.executable,
            arguments: ["backup", "--data", deployment.folder.appendingPathComponent("node1").path, "--to", backups],
            environment: environment
        ).run()
        #expect(backup.status == 0 && backup.stdout.contains("Backed up 2 accounts"), "\(backup.stdout)\(backup.stderr)")
    }
}
