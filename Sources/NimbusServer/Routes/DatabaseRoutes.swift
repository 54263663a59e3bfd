import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NimbusCore

/// `/database/1/{container}/{environment}/{database}/…`: CloudKit Web Services' record database.
struct DatabaseRoutes {
    let service: RecordService

    func register(on router: Router<AppRequestContext>) {
        let database = router.group("database/1/:container/:environment/:database", context: DatabaseRequestContext.self)
        post(database, "records/modify", RecordsModifyRequest.self, service.modify)
        post(database, "records/lookup", RecordsLookupRequest.self, service.lookup)
        post(database, "records/query", RecordsQueryRequest.self, service.query)
        post(database, "records/changes", RecordsChangesRequest.self, service.recordChanges)
        post(database, "assets/upload", AssetUploadRequest.self, service.requestUploads)
        post(database, "assets/rereference", AssetRereferenceRequest.self, service.rereferenceAssets)
        post(database, "records/accept", AcceptSharesRequest.self, service.acceptShares)
        database.get("zones/list") { request, context in try await service.listZones(try await authorize(request, context)) }
        post(database, "zones/lookup", ZonesLookupRequest.self, service.lookupZones)
        post(database, "zones/modify", ZonesModifyRequest.self, service.modifyZones)
        post(database, "zones/changes", DatabaseChangesRequest.self, service.databaseChanges)
        post(database, "changes/database", DatabaseChangesRequest.self, service.databaseChanges)
        post(database, "changes/zone", ZoneChangesRequest.self, service.zoneChanges)
        database.get("subscriptions/list") { request, context in
            try await service.listSubscriptions(try await authorize(request, context))
        }
        post(database, "subscriptions/lookup", SubscriptionsLookupRequest.self, service.lookupSubscriptions)
        post(database, "subscriptions/modify", SubscriptionsModifyRequest.self, service.modifySubscriptions)
        database.get("users/caller") { request, context in try service.caller(try await authorize(request, context)) }
        database.get("users/current") { request, context in try await service.currentUser(try await authorize(request, context)) }
        post(database, "users/discover", UsersDiscoverRequest.self, service.discoverUsers)
        database.get("users/discover") { request, context in
            try await service.discoverAllUsers(try await authorize(request, context))
        }
        post(database, "users/lookup/email", UsersLookupRequest.self, service.lookupUsersByEmail)
        post(database, "users/lookup/id", UsersLookupRequest.self, service.lookupUsersByID)

        // Paths without a database segment, as CloudKit's: the tokens are the caller's in the container.
        let tokens = router.group("database/1/:container/:environment/tokens", context: DatabaseRequestContext.self)
        tokens.post("create") { request, context in
            try service.createNotificationToken(
                try await authorize(request, context, database: "private"),
                try await request.decode(as: TokensCreateRequest.self, context: context))
        }
        tokens.post("register") { request, context in
            try service.registerNotificationToken(
                try await authorize(request, context, database: "private"),
                try await request.decode(as: TokensRegisterRequest.self, context: context))
        }
    }

    /// Web clients' long poll for notifications (`tokens/create`): the unguessable token is the credential.
    static func registerCourier(_ server: ServerState, on router: Router<AppRequestContext>) {
        router.get("push/1/courier/:token") { _, context -> Response in
            do {
                let notification = try await server.push.courier.poll(
                    token: context.parameters.require("token"), timeout: server.configuration.courierPollTimeout,
                    now: server.configuration.now())
                guard let notification else { return Response(status: .noContent) }
                return Response(
                    status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(notification))))
            } catch WebCourier.PollError.unknownToken {
                throw NimbusError.notFound("no such web courier token; ask tokens/create for another")
            } catch WebCourier.PollError.alreadyPolling {
                throw NimbusError.badRequest("another request is already waiting on this token")
            }
        }
    }

    /// Upload and download URLs of assets: their own credentials (an unguessable upload id, a signature).
    static func registerTransfers(_ transfers: AssetTransfers, on router: Router<AppRequestContext>) {
        router.post("assets/1/upload/:id") { request, context in
            try await transfers.upload(
                id: context.parameters.require("id"), body: request.body, contentType: request.headers[.contentType])
        }
        router.get("assets/1/download/:assetID") { request, context in
            try await transfers.download(
                assetID: context.parameters.require("assetID"), expires: request.uri.queryParameters.get("expires"),
                signature: request.uri.queryParameters.get("signature"))
        }
    }

    private func authorize(_ request: Request, _ context: DatabaseRequestContext, database name: String? = nil) async throws
        -> RecordDatabase
    {
        var database = try await service.authorize(
            context, container: context.parameters.require("container"), environment: context.parameters.require("environment"),
            database: try name ?? context.parameters.require("database"), apiToken: request.uri.queryParameters.get("ckAPIToken"))
        database.baseURL = PublicURL.base(
            for: request, configured: service.server.configuration.publicURL, tls: service.server.configuration.tls != nil)
        return database
    }

    /// A POST route: authorize the path, decode the body, answer what the service returns.
    private func post<Body: Decodable & Sendable, Answer: ResponseGenerator>(
        _ group: RouterGroup<DatabaseRequestContext>, _ path: RouterPath, _ body: Body.Type,
        _ handler: @escaping @Sendable (RecordDatabase, Body) async throws -> Answer
    ) {
        group.post(path) { request, context in
            let database = try await authorize(request, context)
            return try await handler(database, try await request.decode(as: Body.self, context: context))
        }
    }
}
