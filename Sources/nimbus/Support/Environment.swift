import Foundation
import Synchronization

/// Reads `NIMBUS_*` variables, the environment twins of command-line options.
///
/// A twin that is set but not a value of its option's kind (`NIMBUS_PORT=80a`) is an error, reported
/// once the command line is parsed (`check()`), never a silent fall back to the default.
enum Environment {
    private static let unreadable = Mutex<[String]>([])

    static func string(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    static func int(_ name: String) -> Int? { parsed(name, as: "a whole number", Int.init) }
    static func double(_ name: String) -> Double? { parsed(name, as: "a number", Double.init) }

    private static func parsed<T>(_ name: String, as kind: String, _ parse: (String) -> T?) -> T? {
        guard let text = string(name) else { return nil }
        guard let value = parse(text) else {
            unreadable.withLock { $0.append("\(name) is \"\(text)\", not \(kind)") }
            return nil
        }
        return value
    }

    /// Fails with every twin that was set to something its option cannot take.
    static func check() throws {
        let problems = unreadable.withLock { $0 }
        guard problems.isEmpty else { throw CLIError(problems.joined(separator: "; ")) }
    }
}
