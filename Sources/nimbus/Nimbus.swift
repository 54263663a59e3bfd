import ArgumentParser
import Logging
import NimbusServer

@main
struct Nimbus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nimbus",
        abstract: "A self-hostable iCloud: key-value store, documents and records.",
        discussion: "Every option has an environment twin (NIMBUS_PORT for --port, and so on).",
        subcommands: [
            Serve.self, Admin.self, SignUp.self, LogIn.self, LogOut.self, Profile.self, KeyValueCommand.self, RecordsCommand.self,
            ZonesCommand.self,
            SchemaCommand.self, DeviceCommand.self, DocsCommand.self, Backup.self, Restore.self, Check.self, Migrate.self,
        ]
    )

    /// Logs go to standard error, so standard output carries only results (and `--json` stays parseable).
    static func main() async {
        do {
            var command = try parseAsRoot()
            do {
                try Environment.check()
            } catch {
                fail(error)
            }
            let format: LineLogHandler.Format = (command as? Serve)?.logFormat == .json ? .json : .text
            LoggingSystem.bootstrap { LineLogHandler(label: $0, format: format) }
            if command is Serve {
                MemoryAllocator.keepFreedMemory()
                OpenFileLimit.raiseToHardLimit()
            }
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
