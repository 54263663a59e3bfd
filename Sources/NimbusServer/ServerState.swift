import Foundation
import HummingbirdBcrypt
import Logging
import NimbusCore
import NimbusStore

/// What every route and middleware of one server shares.
final class ServerState: Sendable {
    let configuration: ServerConfiguration
    let store: any Store
    let push: PushHub
    /// What this node tells the others and hears from them, when the backend is shared.
    let relay: NodeRelay?
    let watermarks: WatermarkRecorder
    let schemas: SchemaRegistry
    let subscriptions: SubscriptionRegistry
    let roles: RoleRegistry
    let blobs: any BlobStore
    /// Signs asset download URLs.
    let urlSigningKey: [UInt8]
    /// What session and API tokens resolved to. Expiry is never cached: a session's expiry date is checked on
    /// every request.
    let credentialCache = ExpiringCache<CredentialKey, StoredCredentials>(lifetime: .seconds(1), keepsMisses: true)
    /// Accounts' emails by account ID and containers by identifier, as every WebDAV request checks them (a
    /// read each otherwise). Neither changes once made.
    let accountEmails = ExpiringCache<String, String>(lifetime: .seconds(1), keepsMisses: false)
    let containers = ExpiringCache<String, Container>(lifetime: .seconds(1), keepsMisses: false)
    /// What this node served lately, for the dashboard's activity page.
    let activity = ActivityRecorder()
    let jobs: BackgroundJobs
    let logger: Logger
    private let limiter = RateLimiter()
    /// Checked against when an email is unknown, at the configured cost, so that sign-in takes as
    /// long for unknown emails as for wrong passwords.
    let decoyPasswordHash: String

    init(configuration: ServerConfiguration, backends: Backends, logger: Logger) throws {
        self.configuration = configuration
        let store = backends.store
        self.store = store
        self.logger = logger
        let push = PushHub()
        self.push = push
        let relay = (store as? any NodeSignals).map { NodeRelay(signals: $0, logger: logger) }
        self.relay = relay
        let changed: @Sendable () -> Void = { relay?.cachesChanged() }
        self.watermarks = WatermarkRecorder(store: store, delay: configuration.acknowledgementDelay, logger: logger)
        self.schemas = SchemaRegistry(store: store, changed: changed)
        self.jobs = BackgroundJobs(store: store, schemas: schemas, logger: logger)
        self.subscriptions = SubscriptionRegistry(store: store, changed: changed)
        self.roles = RoleRegistry(store: store, changed: changed)
        if let relay {
            push.relay(
                through: PushHub.Relay(
                    send: { accountID, message in relay.relay(to: accountID, message) },
                    signedOut: { accountID, deviceID in relay.signedOut(accountID, deviceID: deviceID) }))
            relay.receive(
                push: { accountID, message in push.publish(to: accountID, message, relaying: false) },
                signedOut: { accountID, deviceID in push.disconnect(deviceID: deviceID, of: accountID, relaying: false) },
                cachesChanged: { [schemas, subscriptions, roles] in
                    schemas.forgetAll()
                    subscriptions.forgetAll()
                    roles.forgetAll()
                })
        }
        self.blobs = backends.blobs
        self.urlSigningKey = try Self.loadOrCreateKey(at: configuration.urlSigningKeyPath)
        self.decoyPasswordHash = Bcrypt.hash(Secrets.password(), cost: configuration.bcryptCost)
    }

    /// Reads the URL-signing key, creating it (readable by the owner only) on first start.
    private static func loadOrCreateKey(at path: String) throws -> [UInt8] {
        if let existing = FileManager.default.contents(atPath: path), existing.count == 32 { return Array(existing) }
        let key = Secrets.randomBytes(32)
        guard FileManager.default.createFile(atPath: path, contents: Data(key), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        return key
    }

    /// Throws `THROTTLED` with `retryAfter` (whole seconds, at least 1) when `key` is over `limit`.
    func throttle(_ key: String, limit: RateLimit, now: Date) throws(NimbusError) {
        if let wait = limiter.take(key, limit: limit, now: now) {
            throw NimbusError(
                .throttled, "too many requests; retry after the given number of seconds",
                retryAfter: max(1, Int(wait.rounded(.up))))
        }
    }
}
