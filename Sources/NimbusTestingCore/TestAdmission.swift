import Synchronization

/// How many tests of `.cleansUp` suites run at once. Swift Testing starts every test at the same moment, and
/// each of these starts servers, devices and clients: hundreds of them on a 2-core machine queued their work
/// on two cooperative threads, so that a step a test waits on for a second sat behind minutes of other tests'
/// work. A few at a time, each test's deadlines measure its own work, whatever the machine's load.
///
/// A test whose deployment has three nodes (`TestDeployment`) starts three times the servers of another
/// test: at most two of them run at once, each also holding its place among the eight. Without that bound,
/// a loaded run with many three-node tests at once (two dozen servers beside PostgreSQL and a busy core)
/// had a test's call answered `unavailable`: no pooled database connection within the five seconds after
/// which a node rightly says "try again later".
public final class TestAdmission: Sendable {
    static let shared = TestAdmission(limit: 8)
    public static let severalNodes = TestAdmission(limit: 2)

    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(limit: Int) {
        state = Mutex(State(free: limit))
    }

    /// Waits for a free place, and takes it.
    public func enter() async {
        await withCheckedContinuation { continuation in
            let admitted = state.withLock { state in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    /// Gives the place to the longest waiting test, or frees it.
    public func leave() {
        let next = state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil as CheckedContinuation<Void, Never>?
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
