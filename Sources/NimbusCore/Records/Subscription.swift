/// A subscription: what changes the server tells a user about, over the push socket.
///
/// `query` subscriptions fire for records of a type matching filters (on `create`, `update` and `delete`,
/// per `firesOn`), `zone` subscriptions for any change in a zone, `database` subscriptions for any change
/// in the database.
public struct Subscription: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable { case query, zone, database }
    public enum Event: String, Codable, Sendable, CaseIterable { case create, update, delete }

    public var subscriptionID: String
    public var subscriptionType: Kind
    public var query: RecordQuery?
    public var zoneID: ZoneID?
    public var zoneWide: Bool?
    public var firesOn: [Event]?
    public var firesOnce: Bool?
    public var notificationInfo: NotificationInfo?

    public init(
        subscriptionID: String, subscriptionType: Kind, query: RecordQuery? = nil, zoneID: ZoneID? = nil, zoneWide: Bool? = nil,
        firesOn: [Event]? = nil, firesOnce: Bool? = nil, notificationInfo: NotificationInfo? = nil
    ) {
        self.subscriptionID = subscriptionID
        self.subscriptionType = subscriptionType
        self.query = query
        self.zoneID = zoneID
        self.zoneWide = zoneWide
        self.firesOn = firesOn
        self.firesOnce = firesOnce
        self.notificationInfo = notificationInfo
    }
}

/// What a notification shows; delivered as given with every notification of the subscription.
public struct NotificationInfo: Codable, Sendable, Hashable {
    public var alertBody: String?
    public var alertLocalizationKey: String?
    public var alertLocalizationArgs: [String]?
    public var alertActionLocalizationKey: String?
    public var alertLaunchImage: String?
    public var soundName: String?
    public var shouldBadge: Bool?
    public var shouldSendContentAvailable: Bool?

    public init(
        alertBody: String? = nil, soundName: String? = nil, shouldBadge: Bool? = nil, shouldSendContentAvailable: Bool? = nil
    ) {
        self.alertBody = alertBody
        self.soundName = soundName
        self.shouldBadge = shouldBadge
        self.shouldSendContentAvailable = shouldSendContentAvailable
    }
}
