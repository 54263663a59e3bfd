import Foundation
import Subprocess
import SystemPackage

/// PostgreSQL's own programs (`pg_dump`, `pg_restore`), which backups and restores drive: those of the newest
/// server installed (Debian's `/usr/lib/postgresql/N/bin`), else those on the `PATH`. A `pg_dump` refuses a
/// server newer than itself, so the newest is the one to take.
package struct PostgresPrograms: Sendable {
    let folder: URL?

    package init() {
        let debian = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: debian.path)) ?? []).compactMap(Int.init).sorted()
        folder = versions.reversed().lazy.map { debian.appendingPathComponent("\($0)/bin") }
            .first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("pg_dump").path) }
    }

    /// Runs `program` with `arguments` against `location` (its password in the environment, never in the
    /// arguments, which other users can read); throws `PostgresProgramError` with what it printed when it fails.
    func run(_ program: String, _ arguments: [String], for location: PostgresLocation) async throws {
        let executable: Executable = folder.map { .path(FilePath($0.appendingPathComponent(program).path)) } ?? .name(program)
        var variables: [Environment.Key: String?] = [:]
        if let password = location.password { variables["PGPASSWORD"] = password }
        let result: ExecutionResult<Void, DiscardedOutput, StringOutput<UTF8>>
        do {
            result = try await Subprocess.run(
                executable, arguments: Arguments(arguments), environment: .inherit.updating(variables), output: .discarded,
                error: .string(limit: 1 << 20))
        } catch {
            throw PostgresProgramError(
                program: program, output: "it could not be started (\(error)); install PostgreSQL's client programs")
        }
        guard result.terminationStatus.isSuccess else {
            throw PostgresProgramError(program: program, output: "\(result.terminationStatus): \(result.standardError)")
        }
    }
}

/// A PostgreSQL program that failed, with what it said.
package struct PostgresProgramError: Error, CustomStringConvertible {
    package var program: String
    package var output: String

    package var description: String {
        "\(program) failed: \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
}
