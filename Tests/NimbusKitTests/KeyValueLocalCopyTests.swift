import Foundation
import NimbusKit
import NimbusTestingCore
import Testing

/// The local copy that keeps a device's key-value writes until they upload, and across restarts.
@Suite(.cleansUp) struct KeyValueLocalCopyTests {
    /// Each `set` returns once the local copy holds its value, whichever thread called it: a store opened on
    /// the same folder afterwards sees every write. (Each call once wrote the state it had made, outside any
    /// lock: an older state landing after a newer one lost the newer one's value, in about half the rounds.)
    @Test func setsFromManyThreadsAtOnceAreAllKept() async throws {
        let configuration = UbiquitousKeyValueStore.Configuration(
            session: NimbusSession(
                server: URL(string: "http://127.0.0.1:9")!, sessionToken: "unused", userRecordName: "_ann",
                deviceID: "phone", expiresAt: .distantFuture),
            apiToken: "unused", storeIdentifier: "98Z3R5XU29.com.example.Cloudy",
            localDirectory: TestResources.temporaryDirectory())
        let store = try UbiquitousKeyValueStore(configuration: configuration)
        let threads = 8
        // Rounds of one blocking write a thread, all at once, each on a thread of its own; after each, the
        // local copy as a relaunched app would read it.
        var missing: [Int] = []
        for round in 0..<20 {
            try await onOwnThread {
                let done = DispatchGroup()
                for thread in 0..<threads {
                    done.enter()
                    Thread.detachNewThread {
                        store.set(Int64(round), forKey: "t\(thread)-\(round)")
                        done.leave()
                    }
                }
                done.wait()
            }
            let reopened = try UbiquitousKeyValueStore(configuration: configuration)
            let kept = reopened.dictionaryRepresentation.count
            reopened.close()
            if kept != threads * (round + 1) { missing.append(round) }
        }
        store.close()
        #expect(missing.isEmpty, "rounds whose writes the local copy lacked: \(missing)")
    }
}
