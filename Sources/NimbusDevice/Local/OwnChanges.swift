import Synchronization

/// The files the sync engine itself renames into place in its folder (downloads, placeholders) and the
/// folders it makes, so the folder watcher does not take them for an app's changes: a round woken by the
/// engine's own placements scans every file to find nothing to do (at 100,000 files, seconds of work and a
/// few hundred megabytes).
///
/// Only a rename onto a name and a folder made are announced, each matched only by its own kind of event,
/// and only what the engine announced is let pass: an app's change of that file afterwards is another event
/// and wakes the daemon. An announcement not met (the rename failed, or the folder was not watched yet) is
/// forgotten when the next round begins, as that round's scan sees the folder as it is.
package final class OwnChanges: Sendable {
    /// Absolute paths the engine is renaming files onto, each with how many such renames are under way.
    private let expected = Mutex<[String: Int]>([:])

    package init() {}

    /// Notes that the engine is about to rename a file onto `path` (absolute).
    package func expect(_ path: String) { expected.withLock { $0[path, default: 0] += 1 } }

    /// Takes back `expect(path)` for a rename that did not happen.
    func withdraw(_ path: String) { _ = take(path) }

    /// Notes that the engine is about to make the folder `path` (absolute).
    package func expectFolder(_ path: String) { expect(path + "/") }

    /// Takes back `expectFolder(path)` for a folder that was not made.
    func withdrawFolder(_ path: String) { _ = takeFolder(path) }

    /// Whether a folder made at `path` is one the engine announced; the announcement is used up.
    package func takeFolder(_ path: String) -> Bool { take(path + "/") }

    /// Whether a file renamed onto `path` is one the engine announced; the announcement is used up.
    package func take(_ path: String) -> Bool {
        expected.withLock { expected in
            guard let count = expected[path] else { return false }
            expected[path] = count > 1 ? count - 1 : nil
            return true
        }
    }

    /// Forgets every announcement: a round is about to scan the folder.
    func forgetAll() { expected.withLock { $0 = [:] } }

    /// The paths announced and not yet met (a folder's ending with a slash).
    package var pending: Set<String> { expected.withLock { Set($0.keys) } }
}
