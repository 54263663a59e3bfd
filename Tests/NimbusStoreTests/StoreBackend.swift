import Testing
import Foundation
import NimbusCore
import NimbusTestingCore
import NimbusStore

/// The backends the conformance suite runs against; a backend is done when every test passes on it.
enum StoreBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite

    var testDescription: String { rawValue }

    func makeStore() throws -> any Store {
        switch self {
        case .sqlite:
            let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return try SQLiteStore(path: directory.appendingPathComponent("nimbus.sqlite").path)
        }
    }
}
