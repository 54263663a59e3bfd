import Foundation
import Subprocess
import SystemPackage
import Synchronization

/// A program the tests run as a child process, through swift-subprocess.
///
/// Not Foundation's `Process`: on Linux (Swift 6.3.1) its `run()` copies 256 bytes of each
/// `/proc/self/fd` entry it reads, now and then past the end of a mapped page, and the whole test process
/// crashes (swift-corelibs-foundation#5472; seen here about once in five full runs).
struct ChildProcess {
    var executable: URL
    var arguments: [String]
    /// Variables set, or with nil removed, in the environment the tests run in.
    var environment: [String: String?] = [:]
    var workingDirectory: URL? = nil

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// What a program has printed so far, while it runs, and its process id.
    final class Printed: Sendable {
        private let text = Mutex("")
        private let errorText = Mutex("")
        let processID: Int32

        init(processID: Int32) {
            self.processID = processID
        }

        func append(_ bytes: UnsafeRawBufferPointer) { text.withLock { $0 += String(decoding: bytes, as: UTF8.self) } }
        func appendError(_ bytes: UnsafeRawBufferPointer) {
            errorText.withLock { $0 += String(decoding: bytes, as: UTF8.self) }
        }
        /// Its standard output so far.
        var value: String { text.withLock { $0 } }
        /// Its standard error so far: what a test's failure message shows when the program did not do its part.
        var errors: String { errorText.withLock { $0 } }
    }

    private var configuration: Configuration {
        Configuration(
            executable: .path(FilePath(executable.path)), arguments: Arguments(arguments),
            environment: .inherit.updating(
                Dictionary(uniqueKeysWithValues: environment.map { (Environment.Key(rawValue: $0.key)!, $0.value) })),
            workingDirectory: workingDirectory.map { FilePath($0.path) })
    }

    /// A program of this package, built beside the test binary (or in the package's debug build folder).
    static func built(_ name: String) throws -> URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent(".build/debug/\(name)"),
        ]
        guard let built = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: candidates[0].path])
        }
        return built
    }

    /// Runs the program to its end, collecting what it prints.
    func run() async throws -> Output {
        let result = try await Subprocess.run(configuration, output: .string(limit: 16 << 20), error: .string(limit: 16 << 20))
        return Output(status: result.terminationStatus.code, stdout: result.standardOutput, stderr: result.standardError)
    }

    /// Starts the program, runs `body` with what it prints (collected as it comes), then sends it SIGTERM
    /// and returns how it ended: killed, if it has not ended `within` the time after SIGTERM.
    func whileRunning(within deadline: Duration = .seconds(20), _ body: (Printed) async throws -> Void) async throws
        -> TerminationStatus
    {
        let result = try await Subprocess.run(configuration, input: .none, output: .sequence, error: .sequence) { execution in
            let printed = Printed(processID: execution.processIdentifier.value)
            // Each task answers whether it was one of the program's two outputs ending (or the deadline's kill).
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for try await buffer in execution.standardOutput { buffer.withUnsafeBytes { printed.append($0) } }
                    return true
                }
                group.addTask {
                    for try await buffer in execution.standardError { buffer.withUnsafeBytes { printed.appendError($0) } }
                    return true
                }
                var failure: (any Error)?
                do { try await body(printed) } catch { failure = error }
                // A program that has ended already (the test killed it, say) needs no SIGTERM.
                try? execution.send(signal: .terminate)
                group.addTask {
                    try? await Task.sleep(for: deadline)
                    if !Task.isCancelled { try? execution.send(signal: .kill) }
                    return false
                }
                // Its outputs end when the program does (or when the deadline has killed it).
                var outputsEnded = 0
                while outputsEnded < 2, let outputEnded = try await group.next() {
                    if outputEnded { outputsEnded += 1 } else { break }
                }
                group.cancelAll()
                if let failure { throw failure }
            }
        }
        return result.terminationStatus
    }
}

extension TerminationStatus {
    /// The exit code, or for a program ended by a signal, 128 plus the signal's number as shells report it.
    var code: Int32 {
        switch self {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    }
}
