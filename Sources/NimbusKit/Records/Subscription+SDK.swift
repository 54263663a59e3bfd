import NimbusCore

extension Subscription {
    /// Fires for records matching `query` in a zone (the default zone unless given), on the given events.
    public static func query(
        _ id: String, _ query: Query, zoneID: RecordZoneID? = nil, firesOn: [Event] = Event.allCases, firesOnce: Bool = false,
        notificationInfo: NotificationInfo? = nil
    ) -> Subscription {
        Subscription(
            subscriptionID: id, subscriptionType: .query, query: query.wire, zoneID: zoneID?.wire, firesOn: firesOn,
            firesOnce: firesOnce ? true : nil, notificationInfo: notificationInfo)
    }

    /// Fires for any change in a zone.
    public static func zone(_ id: String, _ zoneID: RecordZoneID, notificationInfo: NotificationInfo? = nil) -> Subscription {
        Subscription(subscriptionID: id, subscriptionType: .zone, zoneID: zoneID.wire, notificationInfo: notificationInfo)
    }

    /// Fires for any change in the database.
    public static func database(_ id: String, firesOnce: Bool = false, notificationInfo: NotificationInfo? = nil) -> Subscription
    {
        Subscription(
            subscriptionID: id, subscriptionType: .database, firesOnce: firesOnce ? true : nil, notificationInfo: notificationInfo
        )
    }
}
