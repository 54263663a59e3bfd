import NimbusCore
import Synchronization

/// What woke a device daemon since it last looked, so that a push announcing only what a round has fetched
/// already (the device's own commits, pushed back to it) runs no round: at 11,000 files that round scanned
/// every one for nothing, beside the other device's download of the commit.
///
/// Every wake but a push asks for a round (a folder change, a reconnection, the rescan timer, a retry, an
/// app's request); a push asks for one while its sequence is beyond the journal's. (A restore, which gives
/// sequences again under a new epoch, restarts the server: the reconnection asks for a round.) What woke
/// the daemon before a round began is what that round fetches and scans, so each round's start uses the
/// reasons up: changes during a long round (a file written while it uploads) wake no round after it when a
/// later round of the same sync scanned them. Each reason is noted before its wake is sent, and wakes
/// coalesce, so a wake whose reasons were used up was served by a round that began after them.
package final class DaemonWakes: Sendable {
    package let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let reasons = Mutex<(any: Bool, pushed: Int64?)>((false, nil))

    package init() {
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a round.
    package func wake() {
        reasons.withLock { $0.any = true }
        continuation.yield()
    }

    /// A push: the container's documents moved to `sequence` on the server.
    package func pushed(_ sequence: Int64) {
        reasons.withLock { $0.pushed = max($0.pushed ?? sequence, sequence) }
        continuation.yield()
    }

    /// A round is about to fetch the server's changes and scan the folder: what woke the daemon so far is
    /// what it will see.
    package func roundBegins() {
        reasons.withLock { $0 = (false, nil) }
    }

    /// Whether the wakes since the last look ask for a round, given the sequence the journal has fetched up
    /// to (nil when it cannot tell: every push asks then); the reasons are used up.
    package func askForRound(fetched: Int64?) -> Bool {
        let (any, pushed) = reasons.withLock { reasons in
            defer { reasons = (false, nil) }
            return reasons
        }
        guard !any else { return true }
        guard let pushed else { return false }
        return fetched.map { pushed > $0 } ?? true
    }
}
