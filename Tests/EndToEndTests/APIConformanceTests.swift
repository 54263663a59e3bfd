import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Schemathesis (from PyPI; `scripts/install-dependencies` installs it) drives a real server from its own
/// OpenAPI document: generated requests, valid and not, to every operation, with the checks that every
/// answer is one the document declares, in the shape and content type it declares, and never a server
/// error. Any finding fails the test, with Schemathesis's report.
@Suite(.cleansUp) struct APIConformanceTests {
    @Test func everyAnswerConformsToTheDocument() async throws {
        // The real clock: rate limits refill as they do in service.
        let server = try await TestServer.start { $0.now = { Date() } }
        do {
            let app = try await server.seedApp()
            // An administrator is a user too: with their session, admin routes and user routes both answer.
            let admin = try await server.signInAdministrator()
            let throwaway = try await server.signInAdministrator()
            let directory = TestServer.temporaryDirectory()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let configuration = """
                headers = { Authorization = "Bearer \(admin.sessionToken)", X-Nimbus-API-Token = "\(app.apiToken)" }
                seed = 20261123
                workers = 1

                [generation]
                max-examples = 8

                [checks]
                enabled = false
                not_a_server_error.enabled = true
                status_code_conformance.enabled = true
                content_type_conformance.enabled = true
                response_schema_conformance.enabled = true
                response_headers_conformance.enabled = true

                [parameters]
                "path.container" = "\(app.container)"
                "path.store" = "\(app.storeIdentifier)"

                # Signing out ends the session it is sent with: a session of its own.
                [[operations]]
                include-path = "/auth/1/signout"
                headers = { Authorization = "Bearer \(throwaway.sessionToken)" }
                """
            try configuration.write(to: directory.appendingPathComponent("schemathesis.toml"), atomically: true, encoding: .utf8)
            let run = try await ChildProcess(
                executable: URL(fileURLWithPath: "/usr/bin/env"),
                arguments: [
                    "python3", "-m", "schemathesis.cli", "run", "\(server.url.absoluteString)/openapi.json", "--max-time", "60",
                    "--no-color", "--phases", "examples,coverage,fuzzing", "--request-timeout", "35",
                ],
                workingDirectory: directory
            ).run()
            #expect(
                run.status == 0,
                "Schemathesis found answers the document does not declare:\n\(run.stdout.suffix(20_000))\n\(run.stderr.suffix(4000))"
            )
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }
}
