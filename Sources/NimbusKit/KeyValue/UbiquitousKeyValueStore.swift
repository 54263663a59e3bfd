import Foundation
import Logging
import NimbusCore
import Synchronization

/// The iCloud key-value store, shaped like `NSUbiquitousKeyValueStore`.
///
/// Reads and writes are local and immediate, work offline, and survive restarts (the local copy lives
/// in `Configuration.localDirectory`). Writes upload in the background; changes from other devices
/// arrive by push and are announced on `changes()`.
///
/// ```swift
/// let store = try UbiquitousKeyValueStore(configuration: .init(session: session, apiToken: token,
///     storeIdentifier: "98Z3R5XU29.com.example.Cloudy", localDirectory: dir))
/// store.start()
/// store.set("chapter 3", forKey: "bookmark")
/// for await change in store.changes() { print(change.reason, change.changedKeys) }
/// ```
public final class UbiquitousKeyValueStore: Sendable {
    public struct Configuration: Sendable {
        public var session: NimbusSession
        public var apiToken: String
        public var storeIdentifier: String
        /// Where the local copy is kept; one directory per device.
        public var localDirectory: URL
        public var limits = KeyValueLimits.iCloud
        public var logger = Logger(label: "nimbus.kv")

        public init(session: NimbusSession, apiToken: String, storeIdentifier: String, localDirectory: URL) {
            self.session = session
            self.apiToken = apiToken
            self.storeIdentifier = storeIdentifier
            self.localDirectory = localDirectory
        }
    }

    public let configuration: Configuration
    private let client: KeyValueClient
    private let state: Mutex<KeyValueStoreState>
    private let stateFile: URL
    /// Held while the local copy is written: each write takes the state as it is once the lock is held, so
    /// a write never puts an older state over a newer one another thread wrote.
    private let writingStateFile = Mutex(())
    private let subscribers = Mutex<[UUID: AsyncStream<KeyValueStoreChange>.Continuation]>([:])
    private let syncWaiters = Mutex<[CheckedContinuation<Bool, Never>]>([])
    private let syncRequests: AsyncStream<Void>.Continuation
    private let syncRequestStream: AsyncStream<Void>
    /// The keys the previous account had, until the new account's first download announces the change.
    private let replacedAccountKeys = Mutex<[String]?>(nil)
    private let lifecycle = Mutex(Lifecycle.idle)
    private let lastSyncErrorStorage = Mutex<NimbusError?>(nil)

    private enum Lifecycle {
        case idle
        case running(sync: Task<Void, Never>, push: PushConnection)
        case closed
    }

    /// Opens the local copy (creating it when missing). Nothing touches the network until `start()`.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        client = KeyValueClient(
            client: NimbusClient(session: configuration.session, apiToken: configuration.apiToken),
            storeIdentifier: configuration.storeIdentifier)
        try FileManager.default.createDirectory(at: configuration.localDirectory, withIntermediateDirectories: true)
        // One local copy per account, so another account signing in on this device never destroys
        // writes the previous one has not uploaded yet; they upload when it signs in again.
        let accountID = configuration.session.userRecordName
        let directory = configuration.localDirectory
        let store = configuration.storeIdentifier
        stateFile = directory.appendingPathComponent("kv-\(store)-\(accountID).json")
        var loaded = KeyValueStoreState(accountID: accountID)
        if let data = try? Data(contentsOf: stateFile) {
            loaded = try JSONDecoder().decode(KeyValueStoreState.self, from: data)
        }
        let lastAccountFile = directory.appendingPathComponent("kv-\(store).account")
        let lastAccount = (try? Data(contentsOf: lastAccountFile)).map { String(decoding: $0, as: UTF8.self) }
        if let lastAccount, lastAccount != accountID {
            let previousFile = directory.appendingPathComponent("kv-\(store)-\(lastAccount).json")
            let previous = (try? Data(contentsOf: previousFile)).flatMap {
                try? JSONDecoder().decode(KeyValueStoreState.self, from: $0)
            }
            var keys = Set(loaded.visibleValues.keys)
            if let previous { keys.formUnion(previous.visibleValues.keys) }
            replacedAccountKeys.withLock { $0 = keys.sorted() }
        }
        try Data(accountID.utf8).write(to: lastAccountFile, options: .atomic)
        state = Mutex(loaded)
        (syncRequestStream, syncRequests) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        try persist()
    }

    // MARK: Reading

    public func object(forKey key: String) -> KeyValue? { state.withLock { $0.value(forKey: key) } }

    public func string(forKey key: String) -> String? {
        if case .string(let value)? = object(forKey: key) { value } else { nil }
    }

    /// The integer for `key`, or 0 (as `NSUbiquitousKeyValueStore.longLong(forKey:)`).
    public func longLong(forKey key: String) -> Int64 {
        switch object(forKey: key) {
        case .int64(let value)?: value
        case .double(let value)? where value.isFinite && abs(value) < 9.2e18: Int64(value)
        case .bool(let value)?: value ? 1 : 0
        default: 0
        }
    }

    /// The number for `key`, or 0.
    public func double(forKey key: String) -> Double {
        switch object(forKey: key) {
        case .double(let value)?: value
        case .int64(let value)?: Double(value)
        default: 0
        }
    }

    /// The boolean for `key`, or false; numbers read as `!= 0`.
    public func bool(forKey key: String) -> Bool {
        switch object(forKey: key) {
        case .bool(let value)?: value
        case .int64(let value)?: value != 0
        default: false
        }
    }

    public func data(forKey key: String) -> Data? {
        if case .data(let value)? = object(forKey: key) { value } else { nil }
    }

    public func date(forKey key: String) -> Date? {
        if case .date(let value)? = object(forKey: key) { value } else { nil }
    }

    public func array(forKey key: String) -> [KeyValue]? {
        if case .array(let value)? = object(forKey: key) { value } else { nil }
    }

    public func dictionary(forKey key: String) -> [String: KeyValue]? {
        if case .dictionary(let value)? = object(forKey: key) { value } else { nil }
    }

    /// Every key and its value, as this device sees them now.
    public var dictionaryRepresentation: [String: KeyValue] { state.withLock { $0.visibleValues } }

    // MARK: Writing

    /// Sets (or with nil, removes) a value. A write that would break a limit changes nothing and is
    /// announced as a `quotaViolationChange` for its key, as iCloud does.
    ///
    /// Returns once the local copy on disk holds the value (unlike Apple's store, which writes it later), so
    /// a write survives the app's crash. That is a file write and sync per call: many values at once are
    /// cheaper as one dictionary value, and calls in a loop belong on a thread of their own, not an async
    /// task's.
    public func set(_ value: KeyValue?, forKey key: String) {
        let result: Result<Void, NimbusError> = state.withLock { state in
            do throws(NimbusError) {
                try state.write(value, forKey: key, limits: configuration.limits)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success:
            try? persist()
            requestSync()
        case .failure(let error):
            configuration.logger.warning("write refused", metadata: ["key": "\(key)", "reason": "\(error.reason)"])
            announce(KeyValueStoreChange(reason: .quotaViolationChange, changedKeys: [key]))
        }
    }

    public func set(_ value: String?, forKey key: String) { set(value.map(KeyValue.string), forKey: key) }
    public func set(_ value: Int64, forKey key: String) { set(.int64(value), forKey: key) }
    public func set(_ value: Int, forKey key: String) { set(.int64(Int64(value)), forKey: key) }
    public func set(_ value: Double, forKey key: String) { set(.double(value), forKey: key) }
    public func set(_ value: Bool, forKey key: String) { set(.bool(value), forKey: key) }
    public func set(_ value: Data?, forKey key: String) { set(value.map(KeyValue.data), forKey: key) }
    public func set(_ value: Date?, forKey key: String) { set(value.map(KeyValue.date), forKey: key) }
    public func set(_ value: [KeyValue]?, forKey key: String) { set(value.map(KeyValue.array), forKey: key) }
    public func set(_ value: [String: KeyValue]?, forKey key: String) { set(value.map(KeyValue.dictionary), forKey: key) }

    public func removeObject(forKey key: String) { set(nil as KeyValue?, forKey: key) }

    /// Whether local writes are still waiting to reach the server.
    public var hasPendingWrites: Bool { state.withLock { !$0.pending.isEmpty } }

    // MARK: Syncing

    /// Starts syncing: the first download, the upload of pending writes, and the push connection that
    /// brings other devices' changes. Call once, at launch.
    public func start() {
        let connection = PushConnection(
            session: configuration.session, logger: configuration.logger,
            onConnect: { [weak self] in self?.requestSync() },
            onMessage: { [weak self] message in self?.received(message) })
        let started = lifecycle.withLock { lifecycle in
            guard case .idle = lifecycle else { return false }
            lifecycle = .running(sync: Task { await self.runSyncLoop() }, push: connection)
            return true
        }
        if started { connection.start() }
    }

    /// Uploads pending writes and downloads what changed, returning whether both succeeded.
    ///
    /// Unlike Apple's, this one waits for the round trip, so `true` means the server has this device's
    /// writes and this device has the server's values as of now.
    @discardableResult
    public func synchronize() async -> Bool {
        start()
        return await withCheckedContinuation { continuation in
            let open = lifecycle.withLock { lifecycle in
                if case .closed = lifecycle { return false }
                syncWaiters.withLock { $0.append(continuation) }
                return true
            }
            if open { requestSync() } else { continuation.resume(returning: false) }
        }
    }

    /// Change events from other devices, the first sync, refused writes and account changes; one
    /// event per batch of changes. Each call returns a new stream.
    public func changes() -> AsyncStream<KeyValueStoreChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: KeyValueStoreChange.self)
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: id) } }
        return stream
    }

    /// Stops syncing and ends every change stream. Pending writes stay on disk for the next launch.
    public func close() {
        let previous = lifecycle.withLock { lifecycle in
            defer { lifecycle = .closed }
            return lifecycle
        }
        if case .running(let sync, let push) = previous {
            push.stop()
            sync.cancel()
        }
        syncRequests.finish()
        for continuation in subscribers.withLock({ $0.values }) { continuation.finish() }
        for waiter in syncWaiters.withLock({ waiters in
            defer { waiters = [] }; return waiters
        }) { waiter.resume(returning: false) }
    }

    /// Why the last sync did not complete, or nil when it did: `NETWORK_UNAVAILABLE` while offline,
    /// `AUTHENTICATION_FAILED` when the session expired or was signed out (sign in again), and so on.
    /// Syncing keeps retrying with backoff meanwhile; local reads and writes are unaffected.
    public var lastSyncError: NimbusError? { lastSyncErrorStorage.withLock { $0 } }

    /// Whether the push socket is connected (changes from other devices arrive without polling).
    public var isPushConnected: Bool { pushConnection?.isConnected ?? false }

    private var pushConnection: PushConnection? {
        lifecycle.withLock { lifecycle in
            if case .running(_, let push) = lifecycle { push } else { nil }
        }
    }

    private func requestSync() { syncRequests.yield() }

    private func received(_ message: PushMessage) {
        guard message.type == .zoneMoved, message.zone == zone else { return }
        if message.sequence > state.withLock({ $0.appliedSequence }) { requestSync() }
    }

    private var zone: ZoneAddress { ZoneAddress(service: .keyValue, name: configuration.storeIdentifier) }

    /// One pass at a time; requests that arrive during a pass are served by the next one.
    private func runSyncLoop() async {
        var retryDelay = Duration.milliseconds(200)
        var retry: Task<Void, Never>?
        for await _ in syncRequestStream {
            let waiters = syncWaiters.withLock { waiters in
                defer { waiters = [] }; return waiters
            }
            let succeeded = await syncPass()
            for waiter in waiters { waiter.resume(returning: succeeded) }
            retry?.cancel()
            if succeeded {
                retryDelay = .milliseconds(200)
            } else if !Task.isCancelled {
                let delay = retryDelay
                retry = Task { [weak self] in
                    try? await Task.sleep(for: delay)
                    if !Task.isCancelled { self?.requestSync() }
                }
                retryDelay = min(retryDelay * 2, .seconds(30))
            }
        }
        retry?.cancel()
    }

    private func syncPass() async -> Bool {
        do {
            if !state.withLock({ $0.initialSyncDone }) {
                try await download(initial: true)
            }
            while try await uploadNextBatch() {}
            try await download(initial: false)
            // A download from scratch may have left values to write again.
            while try await uploadNextBatch() {}
            lastSyncErrorStorage.withLock { $0 = nil }
            return true
        } catch {
            configuration.logger.debug("sync pass failed", metadata: ["error": "\(error)"])
            let wireError = error as? NimbusError ?? NimbusError(.networkUnavailable, "\(error)")
            lastSyncErrorStorage.withLock { $0 = wireError }
            return false
        }
    }

    /// Uploads one batch of pending writes; returns whether more may remain.
    private func uploadNextBatch() async throws -> Bool {
        guard let batch = state.withLock({ $0.uploadBatch(maxOperations: 1024) }) else { return false }
        do {
            let answer = try await client.modify(batch.operations)
            let (applied, caughtUp) = state.withLock { state in
                let before = state.appliedSequence
                state.uploaded(batch, answer: answer)
                return (state.appliedSequence, state.appliedSequence != before)
            }
            try persistFromSync()
            if caughtUp {
                await pushConnection?.send(PushMessage(type: .applied, zone: zone, sequence: applied))
            }
        } catch let error as NimbusError where error.code == .kvLimitExceeded {
            // Refused as a whole: nothing changed on the server; show its values again and say so.
            let changed = state.withLock { $0.rejected(upTo: batch.upTo) }
            try persistFromSync()
            configuration.logger.warning("batch refused", metadata: ["reason": "\(error.reason)"])
            announce(
                KeyValueStoreChange(
                    reason: .quotaViolationChange, changedKeys: changed.isEmpty ? batch.operations.map(\.key) : changed))
        }
        return true
    }

    private func download(initial: Bool) async throws {
        var changedKeys = Set<String>()
        var moreComing = true
        while moreComing {
            let token = state.withLock { $0.syncToken }
            let response: KeyValueChangesResponse
            do {
                response = try await client.changes(since: token)
            } catch let error as NimbusError where error.code == .changeTokenExpired && token != nil {
                // The server no longer knows our position (restored from a backup): download everything again.
                state.withLock { $0.startResync() }
                continue
            }
            let changed = state.withLock { state in
                let changed = state.apply(response.changes, syncToken: response.syncToken)
                if initial { state.initialSyncDone = true }
                return changed
            }
            try persistFromSync()
            changedKeys.formUnion(changed)
            moreComing = response.moreComing
        }
        let rewritten = state.withLock { $0.finishResync() }
        if !rewritten.isEmpty {
            try persistFromSync()
            configuration.logger.notice("writing again values the restored server lost", metadata: ["keys": "\(rewritten.count)"])
        }
        let replacedKeys = replacedAccountKeys.withLock { keys in
            defer { keys = nil }; return keys
        }
        changedKeys.formUnion(replacedKeys ?? [])
        let reason: KeyValueStoreChange.Reason =
            replacedKeys != nil ? .accountChange : initial ? .initialSyncChange : .serverChange
        if !changedKeys.isEmpty || initial {
            announce(KeyValueStoreChange(reason: reason, changedKeys: changedKeys.sorted()))
        }
        let applied = state.withLock { $0.appliedSequence }
        await pushConnection?.send(PushMessage(type: .applied, zone: zone, sequence: applied))
    }

    private func announce(_ change: KeyValueStoreChange) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(change) }
    }

    /// A sync pass still finishing after `close()` must not write this instance's state over what another
    /// instance (the app, relaunched) has written since; what it learned is fetched again next time.
    /// Checked and written under the lifecycle lock, so once `close()` returns no pass writes again.
    private func persistFromSync() throws {
        try lifecycle.withLock { lifecycle in
            if case .closed = lifecycle { return }
            try persist()
        }
    }

    /// Writes the state as it is now to the local copy (atomically, synced).
    private func persist() throws {
        try writingStateFile.withLock { _ in
            try JSONEncoder().encode(state.withLock { $0 }).write(to: stateFile, options: .atomic)
        }
    }
}
