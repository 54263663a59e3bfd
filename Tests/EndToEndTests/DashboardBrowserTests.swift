import Foundation
import NimbusCore
import NimbusTesting
import Testing

/// The dashboard in a real browser: each scenario of `Tests/Dashboard/dashboard_scenarios.py` drives
/// Chromium through Selenium and Debian's chromedriver (all installed by `scripts/install-dependencies`)
/// against a server of its own, and checks what the page shows against the API and the CLI. Screenshots
/// of the main pages land in `.build/dashboard-screenshots`.
///
/// One scenario at a time: a browser is the heaviest thing the suite starts.
@Suite(.cleansUp, .serialized) struct DashboardBrowserTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test(
        .serialized,
        arguments: [
            "signIn", "tutorial", "recordEdits", "deploy", "revoke", "access", "roles", "developers", "documents", "tokens",
            "activity",
            "exportImport", "formToken", "injection", "layout", "darkTheme", "appPasswords",
        ])
    func scenario(_ name: String) async throws {
        let server = try await TestServer.start()
        do {
            let app = try await server.seedApp()
            _ = try await server.signInAdministrator()
            let fixture: [String: String] = [
                "url": server.url.absoluteString, "adminEmail": "root@nimbus.test", "password": TestServer.password,
                "container": app.container, "teamID": app.teamID, "apiToken": app.apiToken,
                "storeIdentifier": app.storeIdentifier,
                "nimbus": try CommandLineTests.executable.path,
                "screenshots": Self.packageRoot.appendingPathComponent(".build/dashboard-screenshots").path,
            ]
            var environment = CommandLineTests.environment(server: nil)
            environment["NIMBUS_DASHBOARD_FIXTURE"] = String(decoding: try JSONEncoder().encode(fixture), as: UTF8.self)
            let run = try await ChildProcess(
                executable: URL(fileURLWithPath: "/usr/bin/env"),
                arguments: [
                    "python3", Self.packageRoot.appendingPathComponent("Tests/Dashboard/dashboard_scenarios.py").path, name,
                ],
                environment: environment
            ).run()
            #expect(run.status == 0, "\(run.stderr.suffix(6000))\n\(run.stdout.suffix(2000))")
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }
}
