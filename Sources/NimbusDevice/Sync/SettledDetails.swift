/// When a file that may still be changing last changed while it was read, as its details (inode, size, time) show
/// at each look: what was read after they were last as they are at the end is the file as it is (checked as a scan
/// checks a file), and only what was read before needs reading again (`LargeUpload`).
package struct SettledDetails<Details: Equatable & Sendable>: Sendable {
    private var looked = false
    private var details: Details?
    /// The chunks read before the details were last seen to change.
    private var since = 0

    package init() {}

    /// The details `now`, looked at with `read` chunks read so far.
    package mutating func look(_ now: Details?, read: Int) {
        guard !looked || now != details else { return }
        (looked, details, since) = (true, now, read)
    }

    /// How many of the `read` chunks, first to last, were read before the details were last as `now` is: all of them
    /// when they changed after the last look, or the file is gone (`now` nil).
    package func stale(now: Details?, read: Int) -> Int {
        guard let now, looked, details == now else { return read }
        return since
    }
}
