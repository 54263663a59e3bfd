import Foundation
import Synchronization

/// Polls `condition` until it holds or `timeout` passes; for state that changes in the background.
/// Returns whether the condition came true.
public func eventually(
    timeout: Duration = .seconds(10), _ condition: @Sendable () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}

/// Collects the elements of an async sequence in the background, so a test can wait for the ones
/// it expects without cancelling (and so ending) the sequence.
public final class Recorder<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let task = Task { [weak self] in
            do {
                for try await element in sequence { self?.elements.withLock { $0.append(element) } }
            } catch {}
        }
        self.task.withLock { $0 = task }
    }

    deinit { task.withLock { $0 }?.cancel() }

    public var all: [Element] { elements.withLock { $0 } }

    /// Waits until an element matching `predicate` has arrived and returns the first such, or nil.
    public func first(timeout: Duration = .seconds(10), where predicate: @Sendable (Element) -> Bool) async -> Element? {
        _ = await eventually(timeout: timeout) { all.contains(where: predicate) }
        return all.first(where: predicate)
    }
}
