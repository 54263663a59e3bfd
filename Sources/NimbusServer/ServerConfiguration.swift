import Foundation
import NimbusPostgres
import Logging
import NimbusCore
import NimbusStore

/// Every setting of `nimbus serve`; each has a flag and a `NIMBUS_` environment twin in the CLI.
package struct ServerConfiguration: Sendable {
    package var host: String = "127.0.0.1"
    /// 0 picks a free port (tests).
    package var port: Int = 8080
    /// Where data is kept: `embedded` keeps everything (an SQLite database and blob files) in `dataDirectory`.
    package var storage: Storage = .embedded
    /// Where blobs (asset files, document chunks) are kept.
    package var blobs: BlobLocation = .dataDirectory
    package var dataDirectory: URL = URL(fileURLWithPath: "nimbus-data")
    package var sessionLifetime: Duration = .seconds(14 * 24 * 3600)
    package var sessionRateLimit = RateLimit(perSecond: 1000, burst: 2000)
    package var apiTokenRateLimit = RateLimit(perSecond: 20000, burst: 40000)
    /// Sign-in and sign-up attempts per email address.
    package var signInRateLimit = RateLimit(perSecond: 1, burst: 10)
    package var keyValueLimits = KeyValueLimits.iCloud
    /// What one user may store across services (key-value stores, records and their assets, documents),
    /// like an iCloud plan: beyond it saves fail with `QUOTA_EXCEEDED`.
    package var userQuotaBytes: Int64 = 5_000_000_000
    /// How long documents' earlier versions and Recently Deleted items are kept.
    package var documentRetention: Duration = .seconds(30 * 24 * 3600)
    /// The largest asset file an upload accepts (CloudKit Web Services allows 50 MB per asset field).
    package var maxAssetBytes: Int64 = 50_000_000
    /// How often asset files that no record holds (and no receipt can still bring into one) are deleted.
    package var assetCollectionInterval: Duration = .seconds(3600)
    /// How long devices' acknowledgements ("applied change N") are gathered before they are written
    /// together (listing devices writes them at once).
    package var acknowledgementDelay: Duration = .seconds(1)
    /// How often the push socket pings a device; a device that does not answer is disconnected.
    package var heartbeat: Duration = .seconds(30)
    /// How long a web client's poll of its courier URL waits for a notification before answering 204.
    package var courierPollTimeout: Duration = .seconds(30)
    /// How long an HTTP connection may sit without a request before it is closed: longer than HTTP
    /// clients keep idle connections (AsyncHTTPClient: 60 s), so they close first. It also ends
    /// connections whose client stopped sending in mid-request, or keeps sending a body nobody reads.
    /// Push sockets are not HTTP connections once upgraded; heartbeats watch them.
    package var idleTimeout: Duration = .seconds(75)
    /// How long a request's head may take: a new connection's first head counted from the connection's
    /// start, later ones from their first byte. A client sending a head a byte at a time is cut off here.
    package var requestHeadTimeout: Duration = .seconds(10)
    /// The longest request line (method, URL, version) the server reads; longer is `414`.
    package var maxRequestLineBytes = 16 << 10
    /// How many connections one client address may hold open; more are closed as they arrive.
    package var maxConnectionsPerAddress = 256
    /// bcrypt work factor; 12 in production, lower only to make test suites fast.
    package var bcryptCost: UInt8 = 12
    package var logLevel: Logger.Level = .info
    /// The server's address as clients reach it (like `https://cloud.example.com`), for the absolute URLs
    /// answers carry; nil takes each request's host. Set it behind a proxy that rewrites the host.
    package var publicURL: String?
    /// Web origins (like `https://app.example.com`) the sign-in page may hand a web auth token to, by
    /// redirect or `postMessage`.
    package var webSignInOrigins: [String] = []
    /// The certificate chain and key to serve HTTPS with; nil: plain HTTP (fine on loopback, or behind a
    /// proxy that terminates TLS).
    package var tls: ServerCertificates.Files?
    /// How often the certificate files are looked at for a change (a renewal); nil: only on SIGHUP, which
    /// reloads at once either way.
    package var certificateCheckInterval: Duration? = .seconds(10)
    /// Where scheduled backups (and those taken before a migration that rewrites data) go; nil: no
    /// scheduled backups, and pre-migration ones in the data directory's `backups`.
    package var backupDirectory: URL?
    /// How often a backup is taken into `backupDirectory` while the server runs; nil: never.
    package var backupInterval: Duration?
    /// How many scheduled backups to keep; nil: all.
    package var backupsKept: Int?
    /// Tests set it to have every answer checked against the OpenAPI document.
    package var documentConformance: DocumentConformance?
    /// The server's clock; tests replace it to expire sessions without waiting.
    package var now: @Sendable () -> Date = { Date() }

    package init() {}

    package var databasePath: String { EmbeddedDataDirectory(dataDirectory).database.path }
    package var blobDirectory: URL { EmbeddedDataDirectory(dataDirectory).blobs }
    package var urlSigningKeyPath: String { EmbeddedDataDirectory(dataDirectory).urlSigningKey.path }
}

/// A token bucket: `perSecond` sustained, up to `burst` at once.
package struct RateLimit: Sendable, Hashable {
    package var perSecond: Double
    package var burst: Double

    package init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = burst
    }
}

/// Where a server keeps its blobs (`Backends.make` builds the store).
package enum BlobLocation: Sendable, Hashable {
    /// `DATA/blobs`: one host's disk, which nodes on that host may share.
    case dataDirectory
    /// A bucket of an S3-compatible object store, which nodes on any host share.
    case s3(S3Client.Location)
}

/// The backends a server can keep its data in (`Backends.make` builds them).
package enum Storage: Sendable, Hashable {
    /// SQLite and a directory of blobs, in the data directory: one process, no setup.
    case embedded
    /// A PostgreSQL database that several nodes share, through a pool of at most `connections`
    /// connections per node; blobs stay in the data directory (which nodes on one host may share).
    case postgres(PostgresLocation, connections: Int)
}
