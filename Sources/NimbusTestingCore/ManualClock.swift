import Foundation
import Synchronization

/// A clock tests move by hand, so expiry and rate limits are tested without waiting.
public final class ManualClock: Sendable {
    private let current: Mutex<Date>

    public init(_ start: Date = Date()) { current = Mutex(start) }

    public func now() -> Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
