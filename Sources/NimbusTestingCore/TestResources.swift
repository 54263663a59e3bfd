import Foundation
import Synchronization

#if canImport(Testing)
    import Testing
#endif

/// What a test leaves behind, undone when it ends: servers to stop (awaited, not detached) and temporary
/// directories to delete, in the reverse of the order they were made.
///
/// A suite marked `@Suite(.cleansUp)` gives each of its tests its own set; `TestServer.start` and
/// `TestResources.temporaryDirectory()` register with the running test's set.
public final class TestResources: Sendable {
    @TaskLocal public static var current: TestResources?

    private let cleanups = Mutex<[@Sendable () async -> Void]>([])

    public init() {}

    /// Runs `cleanup` when the test ends (whether it passed or not).
    public func onCleanup(_ cleanup: @escaping @Sendable () async -> Void) {
        cleanups.withLock { $0.append(cleanup) }
    }

    /// Undoes everything, newest first.
    public func cleanUp() async {
        let all = cleanups.withLock { cleanups in
            defer { cleanups = [] }
            return cleanups
        }
        for cleanup in all.reversed() { await cleanup() }
    }

    /// A new, unique path in the temporary directory (not created), deleted when the running test ends.
    public static func temporaryDirectory(prefix: String = "nimbus-test") -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        // A test's folder may hold tens of thousands of files: deleting them blocks a thread for seconds.
        current?.onCleanup { _ = try? await onOwnThread { try? FileManager.default.removeItem(at: url) } }
        return url
    }
}

// Builds of the benchmarks with the static standard library have no Testing module; tests always do.
#if canImport(Testing)
    /// Gives each test of a suite its own `TestResources`, and cleans them up once the test has ended.
    public struct CleansUpTestResources: TestTrait, SuiteTrait, TestScoping {
        public var isRecursive: Bool { true }

        public func provideScope(
            for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
        ) async throws {
            guard !test.isSuite else { return try await function() }
            // A test case waits for its turn; the test itself (testCase nil) does not, or its cases would wait
            // behind it.
            if testCase != nil { await TestAdmission.shared.enter() }
            defer { if testCase != nil { TestAdmission.shared.leave() } }
            let resources = TestResources()
            do {
                try await TestResources.$current.withValue(resources) { try await function() }
            } catch {
                await resources.cleanUp()
                throw error
            }
            await resources.cleanUp()
        }
    }

    extension Trait where Self == CleansUpTestResources {
        /// Stops the test servers a test started and deletes its temporary directories when it ends.
        public static var cleansUp: Self { Self() }
    }
#endif
