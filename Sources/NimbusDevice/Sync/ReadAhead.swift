import Synchronization

/// How far a large file's reading runs ahead of its uploads. The reader cuts and hashes on while the uploads
/// wait on the server, and each upload reads its chunk again; past `limit` bytes read and not yet sent (or found
/// on the server) the reader waits, so the bytes read again are still in the page cache however large the file.
package final class ReadAhead: Sendable {
    private struct State {
        var outstanding = 0
        var waiter: (bytes: Int, continuation: CheckedContinuation<Void, Never>)?
        var closed = false
    }
    private let limit: Int
    private let state = Mutex(State())

    package init(limit: Int) { self.limit = limit }

    /// Whether the reader waits for bytes to be given back.
    package var isWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Counts `bytes` more read once they fit under the limit (at once when nothing is outstanding, so a chunk
    /// larger than the limit still passes). One reader at a time.
    package func take(_ bytes: Int) async {
        await withCheckedContinuation { continuation in
            let fits = state.withLock { state in
                guard state.closed || state.outstanding == 0 || state.outstanding + bytes <= limit else {
                    state.waiter = (bytes, continuation)
                    return false
                }
                state.outstanding += bytes
                return true
            }
            if fits { continuation.resume() }
        }
    }

    /// Counts `bytes` sent or found on the server.
    package func give(_ bytes: Int) {
        let ready = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.outstanding -= bytes
            guard let (wanted, continuation) = state.waiter, state.outstanding == 0 || state.outstanding + wanted <= limit
            else { return nil }
            state.waiter = nil
            state.outstanding += wanted
            return continuation
        }
        ready?.resume()
    }

    /// Lets the reader go whatever is outstanding: the upload has ended.
    package func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        waiting?.resume()
    }
}
