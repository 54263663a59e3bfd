/// A change to the key-value store that did not come from this device's own writes, like
/// `NSUbiquitousKeyValueStore.didChangeExternallyNotification`.
public struct KeyValueStoreChange: Sendable, Hashable {
    public enum Reason: Sendable, Hashable {
        /// Another device changed values.
        case serverChange
        /// The first download after sign-in arrived. Writes made before it were kept and are uploaded after it.
        case initialSyncChange
        /// A write was refused because it would break a limit; the listed keys show the server's values again.
        case quotaViolationChange
        /// The store now belongs to another account; the previous account's values were replaced.
        case accountChange
    }

    public var reason: Reason
    /// The keys whose values changed, sorted.
    public var changedKeys: [String]

    public init(reason: Reason, changedKeys: [String]) {
        self.reason = reason
        self.changedKeys = changedKeys
    }
}
