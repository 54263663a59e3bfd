/// A subscription firing, as the push socket delivers it.
public struct RecordNotification: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable { case query, recordZone, database }
    public enum Reason: String, Codable, Sendable { case recordCreated, recordUpdated, recordDeleted }

    public var notificationType: Kind
    public var subscriptionID: String
    public var containerIdentifier: String
    public var environment: String
    public var databaseScope: String
    public var zoneID: ZoneID
    /// The record a query notification is about.
    public var recordName: String?
    public var queryNotificationReason: Reason?
    public var notificationInfo: NotificationInfo?

    public init(
        notificationType: Kind, subscriptionID: String, containerIdentifier: String, environment: String, databaseScope: String,
        zoneID: ZoneID, recordName: String? = nil, queryNotificationReason: Reason? = nil,
        notificationInfo: NotificationInfo? = nil
    ) {
        self.notificationType = notificationType
        self.subscriptionID = subscriptionID
        self.containerIdentifier = containerIdentifier
        self.environment = environment
        self.databaseScope = databaseScope
        self.zoneID = zoneID
        self.recordName = recordName
        self.queryNotificationReason = queryNotificationReason
        self.notificationInfo = notificationInfo
    }
}
