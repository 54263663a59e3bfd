import AsyncHTTPClient
import Foundation
import NIOSSL
import Synchronization

/// Which certificates the SDK accepts from a Nimbus server over https. By default a server must present a
/// certificate for its name from a certificate authority the system trusts, as on every device.
///
/// ```swift
/// ServerTrust.processDefault = .certificateAuthority(pemFile: URL(fileURLWithPath: "/etc/nimbus/ca.pem"))
/// ```
public struct ServerTrust: Sendable, Hashable {
    enum Kind: Hashable {
        case system
        case authority(String)
        case none
    }

    let kind: Kind

    /// The system's certificate authorities (the default).
    public static let system = ServerTrust(kind: .system)

    /// A certificate authority of your own (PEM) besides the system's: for a server whose certificate a
    /// private authority signed. The name is still checked.
    public static func certificateAuthority(pemFile: URL) -> ServerTrust { ServerTrust(kind: .authority(pemFile.path)) }

    /// Accepts any certificate for any name: an attacker on the network can read and change everything.
    /// For tests against throwaway certificates only; never ship it.
    public static let insecureForTestingOnly = ServerTrust(kind: .none)

    private static let current = Mutex(ServerTrust.system)

    /// What clients made from now on use; set it once, before the first request.
    public static var processDefault: ServerTrust {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    var tlsConfiguration: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        switch kind {
        case .system: break
        case .authority(let path): configuration.additionalTrustRoots = [.file(path)]
        case .none: configuration.certificateVerification = .none
        }
        return configuration
    }

    private static let clients = Mutex<[ServerTrust: HTTPClient]>([:])
    /// Connections the SDK's HTTP client keeps to one server.
    static let connectionsPerHost = 32

    /// The SDK's HTTP client for this trust, made once per process (see `NimbusClient`).
    var httpClient: HTTPClient {
        Self.clients.withLock { clients in
            if let client = clients[self] { return client }
            var configuration = HTTPClient.Configuration(tlsConfiguration: tlsConfiguration)
            configuration.connectionPool.retryConnectionEstablishment = false
            // Requests beyond it wait for a connection: a device moving a large file keeps 16 chunk transfers in
            // flight, and the questions, announcements and commits of its rounds must not wait for one of them to
            // end (each may wait on the server's disk).
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = Self.connectionsPerHost
            configuration.timeout.connect = .seconds(10)
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[self] = client
            return client
        }
    }
}
