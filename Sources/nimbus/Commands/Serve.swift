import ArgumentParser
import Foundation
import Logging
import NimbusServer

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the Nimbus server (embedded SQLite; no configuration needed).")

    @Option(help: "Data directory. [env: NIMBUS_DATA]")
    var data: String = Environment.string("NIMBUS_DATA") ?? "nimbus-data"

    @OptionGroup var database: StorageOptions
    @OptionGroup var blobStore: BlobOptions

    @Option(help: "Address to listen on. [env: NIMBUS_HOST]")
    var host: String = Environment.string("NIMBUS_HOST") ?? "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one. [env: NIMBUS_PORT]")
    var port: Int = Environment.int("NIMBUS_PORT") ?? 8080

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. [env: NIMBUS_LOG_LEVEL]")
    var logLevel: String = Environment.string("NIMBUS_LOG_LEVEL") ?? "info"

    @Option(help: "Log format: text (key=value lines) or json (one object per line). [env: NIMBUS_LOG_FORMAT]")
    var logFormat: LogFormat = LogFormat(rawValue: Environment.string("NIMBUS_LOG_FORMAT") ?? "") ?? .text

    enum LogFormat: String, ExpressibleByArgument {
        case text, json
    }

    @Option(help: "Requests per second allowed per session (burst: twice as many). [env: NIMBUS_SESSION_RATE]")
    var sessionRate: Double = Environment.double("NIMBUS_SESSION_RATE") ?? 1000

    @Option(help: "Requests per second allowed per API token (burst: twice as many). [env: NIMBUS_TOKEN_RATE]")
    var tokenRate: Double = Environment.double("NIMBUS_TOKEN_RATE") ?? 20000

    @Option(help: "Session lifetime in hours. [env: NIMBUS_SESSION_HOURS]")
    var sessionHours: Double = Environment.double("NIMBUS_SESSION_HOURS") ?? 336

    @Option(help: "What one user may store (key-value, records, assets, documents), in megabytes. [env: NIMBUS_USER_QUOTA_MB]")
    var userQuotaMB: Int = Environment.int("NIMBUS_USER_QUOTA_MB") ?? 5000

    @Option(
        help: "Days documents' earlier versions and Recently Deleted items are kept. [env: NIMBUS_DOCUMENT_RETENTION_DAYS]")
    var documentRetentionDays: Int = Environment.int("NIMBUS_DOCUMENT_RETENTION_DAYS") ?? 30
    @Option(help: "Largest asset file an upload accepts, in megabytes. [env: NIMBUS_MAX_ASSET_MB]")
    var maxAssetMB: Int = Environment.int("NIMBUS_MAX_ASSET_MB") ?? 50
    @Option(help: "Comma-separated web origins the sign-in page may hand web auth tokens to. [env: NIMBUS_WEB_ORIGINS]")
    var webOrigins: String = Environment.string("NIMBUS_WEB_ORIGINS") ?? ""
    @Option(
        help:
            "The server's address as clients reach it, like https://cloud.example.com, for the URLs answers carry; by default each request's host. [env: NIMBUS_PUBLIC_URL]"
    )
    var publicURL: String? = Environment.string("NIMBUS_PUBLIC_URL")
    @Option(help: "Seconds between push heartbeats; silent devices are disconnected. [env: NIMBUS_HEARTBEAT]")
    var heartbeat: Double = Environment.double("NIMBUS_HEARTBEAT") ?? 30
    @Option(help: "Seconds an HTTP connection may sit idle before the server closes it. [env: NIMBUS_IDLE_TIMEOUT]")
    var idleTimeout: Double = Environment.double("NIMBUS_IDLE_TIMEOUT") ?? 75

    @Option(
        help:
            "Seconds a request head may take: a new connection's first from its start, later ones from their first byte. [env: NIMBUS_REQUEST_HEAD_TIMEOUT]"
    )
    var requestHeadTimeout: Double = Environment.double("NIMBUS_REQUEST_HEAD_TIMEOUT") ?? 10
    @Option(
        help:
            "Connections one client address may hold open; more are closed as they arrive. [env: NIMBUS_MAX_CONNECTIONS_PER_ADDRESS]"
    )
    var maxConnectionsPerAddress: Int = Environment.int("NIMBUS_MAX_CONNECTIONS_PER_ADDRESS") ?? 256

    @Option(help: "Serve HTTPS with this certificate chain (PEM, the server's first; RSA or ECDSA). [env: NIMBUS_TLS_CERT]")
    var tlsCert: String? = Environment.string("NIMBUS_TLS_CERT")
    @Option(
        help:
            "The certificate's private key (PEM, unencrypted). Both files are read again on SIGHUP and when they change. [env: NIMBUS_TLS_KEY]"
    )
    var tlsKey: String? = Environment.string("NIMBUS_TLS_KEY")
    @Option(
        help: "Seconds between looks at the certificate files for a renewal; 0: only on SIGHUP. [env: NIMBUS_TLS_CHECK_EVERY]")
    var tlsCheckEvery: Double = Environment.double("NIMBUS_TLS_CHECK_EVERY") ?? 10

    @Option(help: "Back the data up this often while serving, like 6h, 30m or 1d (needs --backup-to). [env: NIMBUS_BACKUP_EVERY]")
    var backupEvery: String? = Environment.string("NIMBUS_BACKUP_EVERY")
    @Option(
        help:
            "Where scheduled backups go, and those taken before a migration that rewrites data (default DATA/backups). [env: NIMBUS_BACKUP_TO]"
    )
    var backupTo: String? = Environment.string("NIMBUS_BACKUP_TO")
    @Option(help: "How many scheduled backups to keep. [env: NIMBUS_BACKUP_KEEP]")
    var backupKeep: Int? = Environment.int("NIMBUS_BACKUP_KEEP")

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        _ = try database.storage()
        _ = try blobStore.location()
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard sessionRate > 0, tokenRate > 0, sessionHours > 0, heartbeat > 0, idleTimeout > 0, requestHeadTimeout > 0,
            maxConnectionsPerAddress > 0
        else {
            throw ValidationError("rates, session hours, heartbeat, timeouts and connection limits must be positive")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard (0...86400).contains(tlsCheckEvery) else { throw ValidationError("--tls-check-every must be 0 to 86400 seconds") }
        if let backupEvery {
            guard Self.duration(backupEvery) != nil else {
                throw ValidationError("--backup-every takes a time from a minute to a year, like 90s, 30m, 6h or 1d")
            }
            guard backupTo != nil else { throw ValidationError("--backup-every needs --backup-to DIR") }
        }
        if let backupKeep, backupKeep < 1 { throw ValidationError("--backup-keep must be at least 1") }
        if let publicURL {
            guard let url = URL(string: publicURL), url.scheme == "http" || url.scheme == "https", url.host != nil,
                url.query == nil
            else {
                throw ValidationError("--public-url must be an http or https URL without a query, like https://cloud.example.com")
            }
        }
    }

    /// "90s", "30m", "6h", "1d": a number and a unit, from a minute to a year.
    static func duration(_ text: String) -> Duration? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let unit = text.last.flatMap({ units[$0] }), let count = Double(text.dropLast()),
            (60...(366 * 86400)).contains(count * unit)
        else { return nil }
        return .milliseconds(Int64(count * unit * 1000))
    }

    func run() async throws {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = URL(fileURLWithPath: data)
        configuration.storage = try database.storage()
        configuration.blobs = try blobStore.location()
        configuration.host = host
        configuration.port = port
        configuration.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        configuration.sessionRateLimit = RateLimit(perSecond: sessionRate, burst: sessionRate * 2)
        configuration.apiTokenRateLimit = RateLimit(perSecond: tokenRate, burst: tokenRate * 2)
        configuration.sessionLifetime = .seconds(sessionHours * 3600)
        configuration.heartbeat = .milliseconds(Int(heartbeat * 1000))
        configuration.idleTimeout = .milliseconds(Int(idleTimeout * 1000))
        configuration.requestHeadTimeout = .milliseconds(Int(requestHeadTimeout * 1000))
        configuration.maxConnectionsPerAddress = maxConnectionsPerAddress
        guard maxAssetMB > 0, userQuotaMB > 0 else {
            throw ValidationError("--max-asset-mb and --user-quota-mb must be positive")
        }
        configuration.userQuotaBytes = Int64(userQuotaMB) * 1_000_000
        configuration.documentRetention = .seconds(max(1, documentRetentionDays) * 24 * 3600)
        configuration.maxAssetBytes = Int64(maxAssetMB) * 1_000_000
        configuration.publicURL = publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        configuration.webSignInOrigins = webOrigins.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        if let tlsCert, let tlsKey {
            configuration.tls = ServerCertificates.Files(
                certificateChain: URL(fileURLWithPath: tlsCert), privateKey: URL(fileURLWithPath: tlsKey))
            configuration.certificateCheckInterval = tlsCheckEvery > 0 ? .milliseconds(Int64(tlsCheckEvery * 1000)) : nil
        }
        configuration.backupDirectory = backupTo.map { URL(fileURLWithPath: $0) }
        configuration.backupInterval = backupEvery.flatMap(Self.duration)
        configuration.backupsKept = backupKeep
        let server: NimbusServer
        do {
            server = try await NimbusServer(configuration: configuration)
        } catch {
            fail(error)
        }
        if let credentials = try await server.ensureAdministrator() {
            FileHandle.standardOutput.write(
                Data(
                    """
                    Created the first administrator. Shown once; keep it safe:
                      email:    \(credentials.email)
                      password: \(credentials.password)

                    """.utf8))
        }
        let blobs =
            switch configuration.blobs {
            case .dataDirectory: configuration.dataDirectory.path
            case .s3(let location): "s3://\(location.bucket)/\(location.prefix) at \(location.endpoint)"
            }
        let place =
            switch configuration.storage {
            case .embedded:
                configuration.blobs == .dataDirectory
                    ? "data in \(blobs)" : "data in \(configuration.dataDirectory.path), blobs in \(blobs)"
            case .postgres(let location, _): "data in \(location), blobs in \(blobs)"
            }
        let (host, scheme) = (host, server.scheme)
        try await server.run { port in
            FileHandle.standardOutput.write(Data("Nimbus is serving \(scheme)://\(host):\(port) with \(place)\n".utf8))
        }
    }
}
