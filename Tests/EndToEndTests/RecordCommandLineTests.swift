import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// `nimbus records`, `nimbus zones` and `nimbus schema` as a user runs them.
@Suite(.cleansUp) struct RecordCommandLineTests {
    func run(_ arguments: [String], _ server: TestServer) async throws -> ChildProcess.Output {
        try await CommandLineTests.run(arguments, server: server)
    }

    @Test func shoppingListFromTheCommandLine() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let device = TestServer.temporaryDirectory().path
        _ = try await run(["signup", "--email", "ann@example.com", "--password", TestServer.password], server)
        let login = try await run(
            [
                "login", "--config", device, "--email", "ann@example.com", "--password", TestServer.password, "--api-token",
                app.apiToken,
                "--container", app.container,
            ], server)
        #expect(login.status == 0, "\(login.stderr)")
        let c = ["--config", device]

        #expect(try await run(["zones", "create", "Shopping"] + c, server).status == 0)
        #expect(try await run(["zones", "list"] + c, server).stdout.contains("Shopping"))
        let list = try await run(
            ["records", "save", "Lists", "--name", "groceries", "--field", "title=Groceries", "--zone", "Shopping"] + c, server)
        #expect(list.status == 0, "\(list.stderr)")
        for (name, number) in [("milk", 2), ("apples", 6), ("bread", 1)] {
            let saved = try await run(
                [
                    "records", "save", "Items", "--name", name, "--field", "name=\(name)", "--field", "number=\(number)",
                    "--field", "list:REFERENCE/DELETE_SELF=groceries", "--zone", "Shopping",
                ] + c, server)
            #expect(saved.status == 0, "\(saved.stderr)")
        }
        let query = try await run(
            ["records", "query", "Items", "--filter", #"name BEGINSWITH "a" OR number > 1"#, "--zone", "Shopping"] + c, server)
        #expect(query.status == 1, "OR is not a CloudKit predicate")
        #expect(query.stderr.contains("^"))
        let found = try await run(
            ["records", "query", "Items", "--filter", "number > 1", "--sort", "name:desc", "--zone", "Shopping"] + c, server)
        #expect(found.status == 0, "\(found.stderr)")
        let lines = found.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("recordName") == true)
        #expect(lines.dropFirst().map { $0.split(separator: " ").first.map(String.init) } == ["milk", "apples"])

        let json = try await run(["records", "get", "milk", "--zone", "Shopping", "--json"] + c, server)
        let records = try JSONDecoder().decode([RecordWire].self, from: Data(json.stdout.utf8))
        #expect(records.first?.fields?["number"] == .int64(2))

        #expect(try await run(["records", "delete", "groceries", "--zone", "Shopping"] + c, server).status == 0)
        let after = try await run(["records", "query", "Items", "--zone", "Shopping", "--json"] + c, server)
        #expect(try JSONDecoder().decode([RecordWire].self, from: Data(after.stdout.utf8)).isEmpty, "\(after.stdout)")
        let missing = try await run(["records", "get", "milk", "--zone", "Shopping"] + c, server)
        #expect(missing.status == 1 && missing.stderr.contains("NOT_FOUND"))
    }

    @Test func schemaExportDiffAndDeploy() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        _ = try await server.signIn(email: "ann@example.com", device: "phone")
        let admin = TestServer.temporaryDirectory().path
        _ = try await server.signInAdministrator()
        let login = try await run(
            [
                "login", "--config", admin, "--email", "root@nimbus.test", "--password", TestServer.password, "--container",
                app.container,
            ], server)
        #expect(login.status == 0, "\(login.stderr)")
        let c = ["--config", admin]
        let file = TestServer.temporaryDirectory().appendingPathComponent("schema.ckdb")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try "DEFINE SCHEMA\n    RECORD TYPE Items (name STRING QUERYABLE SORTABLE, number INT64);\n".write(
            to: file, atomically: true, encoding: .utf8)

        let imported = try await run(["schema", "import", file.path] + c, server)
        #expect(imported.status == 0, "\(imported.stderr)")
        let diff = try await run(["schema", "diff"] + c, server)
        #expect(diff.stdout.contains("+ record type Items") && diff.stdout.contains("+ field Items.number INT64"))
        let deploy = try await run(["schema", "deploy"] + c, server)
        #expect(deploy.status == 0 && deploy.stdout.contains("Deployed to production."), "\(deploy.stderr)")
        let exported = try await run(["schema", "export", "--environment", "production"] + c, server)
        #expect(try Schema(parsing: exported.stdout).recordTypes.map(\.name) == ["Items"])

        try "DEFINE SCHEMA\n    RECORD TYPE Items (name INT64);\n".write(to: file, atomically: true, encoding: .utf8)
        let retyped = try await run(["schema", "import", file.path] + c, server)
        #expect(retyped.status == 1 && retyped.stderr.contains("Items.name"))

        // Custom roles: declared in the schema, given to and taken from accounts.
        try
            "DEFINE SCHEMA\n    CREATE ROLE Editors;\n    RECORD TYPE Items (name STRING QUERYABLE SORTABLE, number INT64, GRANT WRITE TO Editors);\n"
            .write(to: file, atomically: true, encoding: .utf8)
        #expect(try await run(["schema", "import", file.path] + c, server).status == 0)
        let given = try await run(["schema", "roles", "--give", "Editors", "--email", "ann@example.com"] + c, server)
        #expect(given.status == 0 && given.stdout.contains("Editors: ann@example.com"), "\(given.stderr)")
        let taken = try await run(["schema", "roles", "--take", "Editors", "--email", "ann@example.com"] + c, server)
        #expect(taken.status == 0 && taken.stdout.contains("Editors: (nobody)"), "\(taken.stderr)")
        let unknown = try await run(["schema", "roles", "--give", "Owners", "--email", "ann@example.com"] + c, server)
        #expect(unknown.status == 1 && unknown.stderr.contains("NOT_FOUND"))
    }
}

/// The example program under `Examples/ShoppingList`, run against a real server.
@Suite(.cleansUp) struct ShoppingListExampleTests {
    @Test func theExampleRunsEndToEnd() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        _ = try await server.signIn(email: "ann@example.com", device: "phone")
        let example = try CommandLineTests.executable.deletingLastPathComponent().appendingPathComponent("ShoppingList")
        let output = try await ChildProcess(
            executable: example,
            arguments: [
                "--server", server.url.absoluteString, "--email", "ann@example.com", "--password", TestServer.password,
                "--api-token", app.apiToken, "--container", app.container,
            ]
        ).run()
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("Items by name: apples, bread, coffee, milk"))
        #expect(output.stdout.contains("Items with a number: coffee ×2"))
        #expect(output.stdout.contains("Deleted the list; items left: 0"))
    }
}
