import Foundation
import Synchronization

/// What this node served in the last hour, a minute at a time (requests, failures, latency), and its
/// latest changes and errors as they happen: what the dashboard's activity page draws. Each node keeps
/// its own, in memory; the Prometheus metrics at `/metrics` are what to keep for longer.
final class ActivityRecorder: Sendable {
    static let minutesKept = 60
    static let eventsKept = 50
    /// Upper bounds of the latency buckets, in milliseconds; the last catches everything slower.
    static let latencyBounds: [Double] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, .infinity]

    struct Minute: Sendable {
        /// Minutes since 1970.
        var index: Int64
        var requests = 0
        /// Answers with a status of 400 or more.
        var failures = 0
        var latencies = [Int](repeating: 0, count: ActivityRecorder.latencyBounds.count)

        /// The latency below which `fraction` of the minute's requests finished (a bucket's upper bound).
        func latency(percentile fraction: Double) -> Double? {
            guard requests > 0 else { return nil }
            var seen = 0
            for (bucket, count) in latencies.enumerated() {
                seen += count
                if Double(seen) >= fraction * Double(requests) { return ActivityRecorder.latencyBounds[bucket] }
            }
            return ActivityRecorder.latencyBounds.last
        }
    }

    /// A change (a write that succeeded) or an error, by route: never the path itself, which may carry
    /// record names or tokens.
    struct Event: Sendable, Encodable {
        enum Kind: String, Sendable, Encodable { case change, error }
        var time: Date
        var kind: Kind
        var method: String
        var route: String
        var status: Int
    }

    private struct State {
        var minutes: [Minute] = []
        var events: [Event] = []
        var listeners: [UUID: AsyncStream<Event>.Continuation] = [:]
    }

    private let state = Mutex(State())

    func record(method: String, route: String, status: Int, duration: Duration, at time: Date = Date()) {
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        let bucket = Self.latencyBounds.firstIndex { milliseconds <= $0 } ?? Self.latencyBounds.count - 1
        let index = Int64(time.timeIntervalSince1970 / 60)
        let isWrite = !["GET", "HEAD", "OPTIONS"].contains(method)
        let event: Event? =
            status >= 400
            ? Event(time: time, kind: .error, method: method, route: route, status: status)
            : isWrite ? Event(time: time, kind: .change, method: method, route: route, status: status) : nil
        let listeners = state.withLock { state -> [AsyncStream<Event>.Continuation] in
            if state.minutes.last?.index != index {
                state.minutes.append(Minute(index: index))
                if state.minutes.count > Self.minutesKept { state.minutes.removeFirst(state.minutes.count - Self.minutesKept) }
            }
            state.minutes[state.minutes.count - 1].requests += 1
            if status >= 400 { state.minutes[state.minutes.count - 1].failures += 1 }
            state.minutes[state.minutes.count - 1].latencies[bucket] += 1
            guard let event else { return [] }
            state.events.append(event)
            if state.events.count > Self.eventsKept { state.events.removeFirst() }
            return Array(state.listeners.values)
        }
        if let event { for listener in listeners { listener.yield(event) } }
    }

    /// The last hour, one entry a minute (quiet minutes included), oldest first.
    func minutes(until time: Date = Date()) -> [Minute] {
        let last = Int64(time.timeIntervalSince1970 / 60)
        let recorded = Dictionary(state.withLock { $0.minutes }.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        return ((last - Int64(Self.minutesKept) + 1)...last).map { recorded[$0] ?? Minute(index: $0) }
    }

    /// The latest changes and errors, newest first.
    func recentEvents() -> [Event] { state.withLock { $0.events.reversed() } }

    /// Changes and errors from now on, until the stream is dropped.
    func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(100))
        let id = UUID()
        state.withLock { $0.listeners[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) } }
        return stream
    }
}
