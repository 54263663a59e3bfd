/// `subscriptions/modify`.
package struct SubscriptionsModifyRequest: Codable, Sendable {
    package struct Operation: Codable, Sendable {
        package enum OperationType: String, Codable, Sendable { case create, update, delete }
        package var operationType: OperationType
        package var subscription: Subscription

        package init(_ operationType: OperationType, _ subscription: Subscription) {
            self.operationType = operationType
            self.subscription = subscription
        }

        enum CodingKeys: String, CodingKey { case operationType, subscription }
        enum DeletedKeys: String, CodingKey { case subscriptionID, subscriptionType }

        /// A delete may name the subscription by its `subscriptionID` alone, as CloudKit clients send it.
        package init(from decoder: any Decoder) throws {
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

    package var operations: [Operation]
    package init(operations: [Operation]) { self.operations = operations }
}

/// `subscriptions/lookup`.
package struct SubscriptionsLookupRequest: Codable, Sendable {
    package struct Item: Codable, Sendable {
        package var subscriptionID: String
        package init(subscriptionID: String) { self.subscriptionID = subscriptionID }
    }

    package var subscriptions: [Item]
    package init(subscriptions: [Item]) { self.subscriptions = subscriptions }
}

/// A per-subscription failure in a subscriptions answer.
package struct SubscriptionError: Codable, Sendable, Hashable {
    package var subscriptionID: String
    package var reason: String
    package var serverErrorCode: ErrorCode
    package var uuid: String

    package init(subscriptionID: String, error: NimbusError) {
        self.subscriptionID = subscriptionID
        self.reason = error.reason
        self.serverErrorCode = error.code
        self.uuid = error.uuid
    }
}

/// An item of a subscriptions answer: the subscription, or why it failed. Encoded flat, as CloudKit does.
package enum SubscriptionResult: Codable, Sendable, Hashable {
    case subscription(Subscription)
    case failure(SubscriptionError)

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let failure = try? container.decode(SubscriptionError.self) {
            self = .failure(failure)
        } else {
            self = .subscription(try container.decode(Subscription.self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .subscription(let subscription): try container.encode(subscription)
        case .failure(let failure): try container.encode(failure)
        }
    }
}

package struct SubscriptionsResponse: Codable, Sendable {
    package var subscriptions: [SubscriptionResult]
    package init(subscriptions: [SubscriptionResult]) { self.subscriptions = subscriptions }
}

/// `tokens/create`: a web client asks for a push token and the URL to long-poll for notifications.
package struct TokensCreateRequest: Codable, Sendable {
    /// `development` or `production`; the environment of the URL when absent.
    package var apnsEnvironment: String?
    package init(apnsEnvironment: String? = nil) { self.apnsEnvironment = apnsEnvironment }
}

package struct TokensCreateResponse: Codable, Sendable {
    package var apnsEnvironment: String
    package var apnsToken: String
    /// `GET` it to wait for the next notification (a `RecordNotification`); `204` when none came in time.
    package var webcourierURL: String

    package init(apnsEnvironment: String, apnsToken: String, webcourierURL: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
        self.webcourierURL = webcourierURL
    }
}

/// `tokens/register`: start delivering the user's notifications to a token from `tokens/create`.
package struct TokensRegisterRequest: Codable, Sendable {
    package var apnsEnvironment: String?
    package var apnsToken: String
    package init(apnsEnvironment: String? = nil, apnsToken: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
    }
}

package struct TokensRegisterResponse: Codable, Sendable {
    package var apnsEnvironment: String
    package var apnsToken: String
    package init(apnsEnvironment: String, apnsToken: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
    }
}
