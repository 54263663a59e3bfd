import Foundation
@testable import NimbusStore
import NimbusTestingCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Nodes of one deployment may share a blob folder on one host: each is its own process, and what keeps a
/// sweep on one from deleting a blob an upload on another has just kept must hold between processes.
@Suite(.cleansUp) struct BlobFolderSharingTests {
    @Test func theSweepsDecisionLockExcludesOtherProcesses() throws {
        let folder = TestResources.temporaryDirectory().appendingPathComponent("blobs")
        _ = try LocalBlobStore(directory: folder)
        let lock = SweepDecisionLock(beside: folder)
        // Another process's open of the lock file, as another node's store makes at its first decision.
        let other = open(folder.appendingPathExtension("deciding").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(other >= 0)
        defer { close(other) }
        try lock.withLock {
            #expect(flock(other, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK, "held against another open")
        }
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0, "free once the decision is made")
        flock(other, LOCK_UN)
    }
}
