import Foundation
import NimbusCore
import NimbusPostgres
import NimbusStore
import NimbusTestingCore
import Testing

/// The backends the conformance suite runs against; a backend is done when every test passes on it.
enum StoreBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    /// A database of its own on the test process's throwaway cluster (`TemporaryPostgres`).
    case postgres

    var testDescription: String { rawValue }

    func makeStore() async throws -> any Store {
        switch self {
        case .sqlite:
            let directory = TestResources.temporaryDirectory(prefix: "nimbus-store")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return try SQLiteStore(path: directory.appendingPathComponent("nimbus.sqlite").path)
        case .postgres:
            let url = try await TemporaryPostgres.shared().database()
            let store = try await PostgresStore.open(try PostgresLocation(url: url), connections: 8)
            TestResources.current?.onCleanup { store.close() }
            return store
        }
    }
}
