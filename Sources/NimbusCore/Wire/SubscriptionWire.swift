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

/// `subscriptions/modify`.
public struct SubscriptionsModifyRequest: Codable, Sendable {
    public struct Operation: Codable, Sendable {
        public enum OperationType: String, Codable, Sendable { case create, update, delete }
        public var operationType: OperationType
        public var subscription: Subscription

        public init(_ operationType: OperationType, _ subscription: Subscription) {
            self.operationType = operationType
            self.subscription = subscription
        }

        enum CodingKeys: String, CodingKey { case operationType, subscription }
        enum DeletedKeys: String, CodingKey { case subscriptionID, subscriptionType }

        /// A delete may name the subscription by its `subscriptionID` alone, as CloudKit clients send it.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            operationType = try container.decode(OperationType.self, forKey: .operationType)
            guard operationType == .delete else {
                subscription = try container.decode(Subscription.self, forKey: .subscription)
                return
            }
            let named = try container.nestedContainer(keyedBy: DeletedKeys.self, forKey: .subscription)
            subscription = Subscription(
                subscriptionID: try named.decode(String.self, forKey: .subscriptionID),
                subscriptionType: try named.decodeIfPresent(Subscription.Kind.self, forKey: .subscriptionType) ?? .zone)
        }
    }

    public var operations: [Operation]
    public init(operations: [Operation]) { self.operations = operations }
}

/// `subscriptions/lookup`.
public struct SubscriptionsLookupRequest: Codable, Sendable {
    public struct Item: Codable, Sendable {
        public var subscriptionID: String
        public init(subscriptionID: String) { self.subscriptionID = subscriptionID }
    }

    public var subscriptions: [Item]
    public init(subscriptions: [Item]) { self.subscriptions = subscriptions }
}

/// A per-subscription failure in a subscriptions answer.
public struct SubscriptionError: Codable, Sendable, Hashable {
    public var subscriptionID: String
    public var reason: String
    public var serverErrorCode: ErrorCode
    public var uuid: String

    public init(subscriptionID: String, error: NimbusError) {
        self.subscriptionID = subscriptionID
        self.reason = error.reason
        self.serverErrorCode = error.code
        self.uuid = error.uuid
    }
}

/// An item of a subscriptions answer: the subscription, or why it failed. Encoded flat, as CloudKit does.
public enum SubscriptionResult: Codable, Sendable, Hashable {
    case subscription(Subscription)
    case failure(SubscriptionError)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let failure = try? container.decode(SubscriptionError.self) {
            self = .failure(failure)
        } else {
            self = .subscription(try container.decode(Subscription.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .subscription(let subscription): try container.encode(subscription)
        case .failure(let failure): try container.encode(failure)
        }
    }
}

public struct SubscriptionsResponse: Codable, Sendable {
    public var subscriptions: [SubscriptionResult]
    public init(subscriptions: [SubscriptionResult]) { self.subscriptions = subscriptions }
}

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

/// `tokens/create`: a web client asks for a push token and the URL to long-poll for notifications.
public struct TokensCreateRequest: Codable, Sendable {
    /// `development` or `production`; the environment of the URL when absent.
    public var apnsEnvironment: String?
    public init(apnsEnvironment: String? = nil) { self.apnsEnvironment = apnsEnvironment }
}

public struct TokensCreateResponse: Codable, Sendable {
    public var apnsEnvironment: String
    public var apnsToken: String
    /// `GET` it to wait for the next notification (a `RecordNotification`); `204` when none came in time.
    public var webcourierURL: String

    public init(apnsEnvironment: String, apnsToken: String, webcourierURL: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
        self.webcourierURL = webcourierURL
    }
}

/// `tokens/register`: start delivering the user's notifications to a token from `tokens/create`.
public struct TokensRegisterRequest: Codable, Sendable {
    public var apnsEnvironment: String?
    public var apnsToken: String
    public init(apnsEnvironment: String? = nil, apnsToken: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
    }
}

public struct TokensRegisterResponse: Codable, Sendable {
    public var apnsEnvironment: String
    public var apnsToken: String
    public init(apnsEnvironment: String, apnsToken: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
    }
}
