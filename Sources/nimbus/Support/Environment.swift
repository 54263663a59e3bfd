import Foundation

/// Reads `NIMBUS_*` variables, the environment twins of command-line options.
enum Environment {
    static func string(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    static func int(_ name: String) -> Int? { string(name).flatMap(Int.init) }
    static func double(_ name: String) -> Double? { string(name).flatMap(Double.init) }
}
