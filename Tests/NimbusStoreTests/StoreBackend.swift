import Testing
import Foundation
import NimbusCore
import NimbusStore

/// The backends the conformance suite runs against; a backend is done when every test passes on it.
enum StoreBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite

    var testDescription: String { rawValue }

    func makeStore() throws -> any Store {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-store-\(UUIDString.random())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return try SQLiteStore(path: directory.appendingPathComponent("nimbus.sqlite").path)
        }
    }
}
