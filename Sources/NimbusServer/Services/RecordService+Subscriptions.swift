import Foundation
import NimbusCore
import NimbusStore

extension RecordService {
    static let maxSubscriptionsPerUser = 1000

    func listSubscriptions(_ database: RecordDatabase) async throws -> SubscriptionsResponse {
        let caller = try database.requireCaller()
        let subscriptions = try await server.subscriptions.subscriptions(of: caller.userRecordName, in: database)
        return SubscriptionsResponse(
            subscriptions: subscriptions.sorted { $0.subscriptionID < $1.subscriptionID }.map { .subscription($0) })
    }

    func lookupSubscriptions(_ database: RecordDatabase, _ request: SubscriptionsLookupRequest) async throws
        -> SubscriptionsResponse
    {
        let caller = try database.requireCaller()
        let mine = try await server.subscriptions.subscriptions(of: caller.userRecordName, in: database)
        return SubscriptionsResponse(
            subscriptions: request.subscriptions.map { item in
                mine.first { $0.subscriptionID == item.subscriptionID }.map { .subscription($0) }
                    ?? .failure(
                        SubscriptionError(
                            subscriptionID: item.subscriptionID,
                            error: .notFound("subscription \(item.subscriptionID) does not exist")))
            })
    }

    /// Creates, updates and deletes the caller's subscriptions; each operation succeeds or fails alone.
    func modifySubscriptions(_ database: RecordDatabase, _ request: SubscriptionsModifyRequest) async throws
        -> SubscriptionsResponse
    {
        let caller = try database.requireCaller()
        guard (1...Self.maxOperations).contains(request.operations.count) else {
            throw NimbusError.badRequest("operations must hold 1 to \(Self.maxOperations) operations")
        }
        let schema = try await schemas.schema(database)
        var existing = Dictionary(
            try await server.subscriptions.subscriptions(of: caller.userRecordName, in: database).map { ($0.subscriptionID, $0) },
            uniquingKeysWith: { first, _ in first })
        var answer = [SubscriptionResult]()
        var changes = [(id: String, subscription: Subscription?)]()
        for operation in request.operations {
            var subscription = operation.subscription
            let id = subscription.subscriptionID
            do {
                try Identifiers.validateSubscriptionID(id)
                guard !changes.contains(where: { $0.id == id }) else {
                    throw NimbusError.badRequest("subscriptionID \(id) appears more than once in this request")
                }
                switch operation.operationType {
                case .delete:
                    // Clients name the subscription by its ID alone; the answer is the subscription deleted.
                    guard let deleted = existing.removeValue(forKey: id) else {
                        throw NimbusError.notFound("subscription \(id) does not exist")
                    }
                    subscription = deleted
                    changes.append((id, nil))
                case .create, .update:
                    if operation.operationType == .update, existing[id] == nil {
                        throw NimbusError.notFound("subscription \(id) does not exist")
                    }
                    try validate(&subscription, database: database, schema: schema)
                    existing[id] = subscription
                    guard existing.count <= Self.maxSubscriptionsPerUser else {
                        throw NimbusError(
                            .quotaExceeded, "a user has at most \(Self.maxSubscriptionsPerUser) subscriptions per database")
                    }
                    changes.append((id, subscription))
                }
                answer.append(.subscription(subscription))
            } catch let error as NimbusError {
                answer.append(.failure(SubscriptionError(subscriptionID: id, error: error)))
            }
        }
        if !changes.isEmpty { try await server.subscriptions.save(changes, subscriber: caller.userRecordName, in: database) }
        return SubscriptionsResponse(subscriptions: answer)
    }

    /// Checks a subscription against the database and schema: its zone exists in this kind of database,
    /// its query's type exists and is readable, its filters are ones a query could run.
    private func validate(_ subscription: inout Subscription, database: RecordDatabase, schema: Schema) throws {
        if database.scope == .shared, subscription.subscriptionType != .database {
            throw NimbusError.badRequest("the shared database has only database subscriptions, as CloudKit's")
        }
        if let zoneID = subscription.zoneID { _ = try zoneName(zoneID, in: database) }
        switch subscription.subscriptionType {
        case .query:
            guard let query = subscription.query else { throw NimbusError.badRequest("a query subscription needs a query") }
            guard let type = schema.recordTypes.first(where: { $0.name == query.recordType }) else {
                throw NimbusError.badRequest("record type \(query.recordType) is not in this environment's schema")
            }
            guard RecordAccess(database).readScope(type) != .none else {
                throw NimbusError.accessDenied("you may not read \(type.name) records")
            }
            _ = try QueryPlanner(recordType: type).plan(filters: query.filterBy ?? [], sorts: [])
            subscription.firesOn = subscription.firesOn ?? Subscription.Event.allCases
        case .zone:
            guard database.scope != .public else {
                throw NimbusError.badRequest("the public database has only query subscriptions")
            }
            subscription.zoneID = subscription.zoneID ?? .defaultZone
        case .database:
            guard database.scope != .public else {
                throw NimbusError.badRequest("the public database has only query subscriptions")
            }
        }
    }

    /// Sends the notifications a committed batch fires, over the subscribers' push sockets. In the shared
    /// database, `participants` says what each participant was shared: they hear of changes they may see.
    func notifySubscribers(
        _ database: RecordDatabase, zoneName: String, changes: [RecordChange], schema: Schema,
        participants: [String: SharedScope] = [:]
    ) async {
        let subscriptions: [SubscriptionRegistry.Stored]
        do {
            subscriptions = try await server.subscriptions.all(database)
        } catch {
            server.logger.error("could not read subscriptions", metadata: ["error": "\(error)"])
            return
        }
        guard !subscriptions.isEmpty, let last = changes.last else { return }
        let roles: [String: Set<String>]
        do {
            roles =
                database.scope == .public
                ? try await server.roles.holders(container: database.container, environment: database.environment) : [:]
        } catch {
            server.logger.error("could not read security roles", metadata: ["error": "\(error)"])
            return
        }
        let zone = database.zone(zoneName)
        var firedOnce = [String: [String]]()
        for stored in subscriptions {
            switch database.scope {
            case .public: break
            case .private:
                // In a private database only its owner's subscriptions can see its changes.
                guard stored.subscriber == database.owner else { continue }
            case .shared:
                guard let scope = participants[stored.subscriber], changes.contains(where: { scope.reaches($0.membership) })
                else { continue }
            }
            let fired = notifications(
                for: stored, database: database, zoneName: zoneName, changes: changes, schema: schema,
                roles: roles[stored.subscriber] ?? [])
            for notification in fired {
                server.push.publish(
                    to: stored.subscriber,
                    PushMessage(type: .notification, zone: zone.address, sequence: last.sequence, notification: notification))
            }
            if !fired.isEmpty, stored.subscription.firesOnce == true {
                firedOnce[stored.subscriber, default: []].append(stored.subscription.subscriptionID)
            }
        }
        for (subscriber, ids) in firedOnce {
            do {
                try await server.subscriptions.save(ids.map { ($0, nil) }, subscriber: subscriber, in: database)
            } catch {
                server.logger.error("could not remove a fired-once subscription", metadata: ["error": "\(error)"])
            }
        }
    }

    private func notifications(
        for stored: SubscriptionRegistry.Stored, database: RecordDatabase, zoneName: String, changes: [RecordChange],
        schema: Schema,
        roles: Set<String>
    ) -> [RecordNotification] {
        let subscription = stored.subscription
        func notification(_ kind: RecordNotification.Kind, record: String? = nil, reason: RecordNotification.Reason? = nil)
            -> RecordNotification
        {
            RecordNotification(
                notificationType: kind, subscriptionID: subscription.subscriptionID, containerIdentifier: database.container,
                environment: database.environment.rawValue, databaseScope: database.scope.rawValue,
                zoneID: database.zoneID(zoneName),
                recordName: record, queryNotificationReason: reason, notificationInfo: subscription.notificationInfo)
        }
        switch subscription.subscriptionType {
        case .database:
            // As CloudKit's: changes in custom zones only.
            return zoneName == RecordDatabase.defaultZoneName ? [] : [notification(.database)]
        case .zone:
            return (subscription.zoneID?.zoneName ?? RecordDatabase.defaultZoneName) == zoneName
                ? [notification(.recordZone)] : []
        case .query:
            guard let query = subscription.query,
                subscription.zoneWide == true || (subscription.zoneID?.zoneName ?? RecordDatabase.defaultZoneName) == zoneName,
                let type = schema.recordTypes.first(where: { $0.name == query.recordType })
            else { return [] }
            guard let conditions = try? QueryPlanner(recordType: type).plan(filters: query.filterBy ?? [], sorts: []).conditions
            else { return [] }
            var subscriber = RecordDatabase(
                container: database.container, environment: database.environment, scope: database.scope,
                caller: .init(userRecordName: stored.subscriber, deviceID: ""), owner: database.owner)
            subscriber.roles = roles
            let access = RecordAccess(subscriber)
            let events = Set(subscription.firesOn ?? Subscription.Event.allCases)
            func matches(_ record: StoredRecord?, _ name: String) -> Bool {
                guard let record, record.recordType == type.name,
                    access.allows(.read, type, creator: record.created.userRecordName)
                else { return false }
                let rows = RecordIndexer.allRows(name: name, record: record)
                return conditions.allSatisfy { $0.matches(rows) }
            }
            return changes.compactMap { change in
                let before = matches(change.before, change.name)
                let after = matches(change.after, change.name)
                switch (change.before, change.after) {
                case (nil, _?) where after && events.contains(.create):
                    return notification(.query, record: change.name, reason: .recordCreated)
                case (_?, _?) where (before || after) && events.contains(.update):
                    return notification(.query, record: change.name, reason: .recordUpdated)
                case (_?, nil) where before && events.contains(.delete):
                    return notification(.query, record: change.name, reason: .recordDeleted)
                default:
                    return nil
                }
            }
        }
    }
}
