import Foundation
import NIOSSL
import PostgresNIO

/// Where a PostgreSQL database is, from a connection URL as libpq writes them:
/// `postgres://user:password@host:port/database?sslmode=disable` (or `postgresql://`). A `host` query
/// parameter naming a folder connects through the Unix socket in it.
///
/// Several servers, as libpq takes them (`postgres://user@db1:5432,db2:5432/nimbus?target_session_attrs=read-write`),
/// name a primary and its standbys: the store connects to the first that answers (with `read-write`, the
/// first that takes writes) and looks again when that one fails, so a promoted standby is found without a
/// restart (`PostgresServers`).
package struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    package enum TLSMode: String, Sendable {
        /// Plain connections only (loopback, or a network the operator trusts).
        case disable
        /// TLS when the server offers it.
        case prefer
        /// TLS with the server's certificate verified.
        case require
    }

    /// Which of the servers a store may use (libpq's `target_session_attrs`).
    package enum SessionAttributes: String, Sendable {
        /// The first that accepts a connection.
        case any
        /// The first that takes writes: a primary, not a standby.
        case readWrite = "read-write"
    }

    package struct Server: Sendable, Hashable, CustomStringConvertible {
        package var host: String
        package var port: Int

        package init(host: String, port: Int = 5432) {
            self.host = host
            self.port = port
        }

        package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// One or more servers, in the order they are tried.
    package var servers: [Server]
    package var socketFolder: String?
    package var user: String
    package var password: String?
    package var database: String
    package var tls: TLSMode
    package var sessionAttributes: SessionAttributes

    package struct InvalidURL: Error, CustomStringConvertible {
        package var description: String
    }

    package init(
        host: String = "127.0.0.1", port: Int = 5432, socketFolder: String? = nil, user: String, password: String? = nil,
        database: String, tls: TLSMode = .prefer
    ) {
        self.init(
            servers: [Server(host: host, port: port)], socketFolder: socketFolder, user: user, password: password,
            database: database, tls: tls)
    }

    package init(
        servers: [Server], socketFolder: String? = nil, user: String, password: String? = nil, database: String,
        tls: TLSMode = .prefer, sessionAttributes: SessionAttributes = .any
    ) {
        self.servers = servers
        self.socketFolder = socketFolder
        self.user = user
        self.password = password
        self.database = database
        self.tls = tls
        self.sessionAttributes = sessionAttributes
    }

    package init(url text: String) throws {
        let example = "a database URL looks like postgres://user:password@host:5432/database"
        guard let schemeEnd = text.range(of: "://"), ["postgres", "postgresql"].contains(text[..<schemeEnd.lowerBound])
        else { throw InvalidURL(description: example) }
        // libpq's list of servers (`host1:5432,host2:5433`) is no URL host Foundation parses: the URL is read
        // with the first server alone, and the list on its own.
        let afterScheme = text[schemeEnd.upperBound...]
        let authority = afterScheme.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let userInfoEnd = authority.lastIndex(of: "@")
        let hostList = userInfoEnd.map { authority[authority.index(after: $0)...] } ?? authority
        let servers =
            try hostList.isEmpty ? [] : hostList.split(separator: ",", omittingEmptySubsequences: false).map(Self.server)
        let firstOnly = text.replacingCharacters(
            in: hostList.startIndex..<hostList.endIndex, with: servers.first.map { "\($0)" } ?? "")
        guard let components = URLComponents(string: firstOnly) else { throw InvalidURL(description: example) }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        guard let user = components.percentEncodedUser.flatMap({ $0.removingPercentEncoding }) ?? query["user"] else {
            throw InvalidURL(description: "the database URL names no user (postgres://USER@host/database)")
        }
        let database = String(components.percentEncodedPath.dropFirst()).removingPercentEncoding ?? ""
        guard !database.isEmpty else {
            throw InvalidURL(description: "the database URL names no database (postgres://user@host/DATABASE)")
        }
        var tls = TLSMode.prefer
        if let mode = query["sslmode"] {
            switch mode {
            case "disable": tls = .disable
            case "allow", "prefer": tls = .prefer
            case "require", "verify-ca", "verify-full": tls = .require
            default: throw InvalidURL(description: "sslmode \(mode) is not one of disable, prefer, require")
            }
        }
        let attributes = try query["target_session_attrs"].map { value in
            guard let attributes = SessionAttributes(rawValue: value) else {
                throw InvalidURL(description: "target_session_attrs \(value) is not one of any, read-write")
            }
            return attributes
        }
        let socketFolder = query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        if socketFolder != nil, servers.count > 1 {
            throw InvalidURL(description: "a Unix socket folder (?host=/folder) names one server; list no others")
        }
        self.init(
            servers: servers.isEmpty ? [Server(host: "127.0.0.1")] : servers, socketFolder: socketFolder, user: user,
            password: components.percentEncodedPassword.flatMap { $0.removingPercentEncoding } ?? query["password"],
            database: database, tls: tls, sessionAttributes: attributes ?? .any)
    }

    /// One entry of a URL's list of servers: `host`, `host:port`, `[v6]` or `[v6]:port`.
    private static func server(_ text: Substring) throws -> Server {
        let invalid = InvalidURL(description: "\(text) is not a server of a database URL (host or host:port)")
        var host = text
        var port = 5432
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()) else { throw invalid }
                port = number
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            guard let number = Int(text[text.index(after: colon)...]) else { throw invalid }
            port = number
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw invalid }
        return Server(host: String(host).removingPercentEncoding ?? String(host), port: port)
    }

    /// Whether the store looks for another server when its connections fail: only with a choice to make.
    var seeksAnotherServer: Bool { servers.count > 1 || sessionAttributes == .readWrite }

    /// The URL without its password, for logs and answers.
    package var description: String {
        let place = socketFolder.map { "?host=\($0)" } ?? ""
        let attributes =
            sessionAttributes == .any ? "" : "\(place.isEmpty ? "?" : "&")target_session_attrs=\(sessionAttributes.rawValue)"
        return "postgres://\(user)@\(servers.map(\.description).joined(separator: ","))/\(database)\(place)\(attributes)"
    }

    /// libpq's connection string for one of the servers, as PostgreSQL's programs take it: without the
    /// password, which they read from `PGPASSWORD`.
    func connectionString(_ server: Server) -> String {
        func quoted(_ value: String) -> String {
            "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
        }
        let host = socketFolder ?? server.host
        let sslmode =
            switch tls {
            case .disable: "disable"
            case .prefer: "prefer"
            case .require: "require"
            }
        return "host=\(quoted(host)) port=\(server.port) user=\(quoted(user)) dbname=\(quoted(database)) sslmode=\(sslmode)"
    }

    private var clientTLS: PostgresClient.Configuration.TLS {
        switch tls {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }

    /// The pool's configuration for one of the servers.
    func clientConfiguration(_ server: Server) -> PostgresClient.Configuration {
        if let socketFolder {
            return PostgresClient.Configuration(
                unixSocketPath: "\(socketFolder)/.s.PGSQL.\(server.port)", username: user, password: password,
                database: database)
        }
        return PostgresClient.Configuration(
            host: server.host, port: server.port, username: user, password: password, database: database, tls: clientTLS)
    }

    /// One connection's configuration for one of the servers (to ask it whether it takes writes).
    func connectionConfiguration(_ server: Server) throws -> PostgresConnection.Configuration {
        if let socketFolder {
            return PostgresConnection.Configuration(
                unixSocketPath: "\(socketFolder)/.s.PGSQL.\(server.port)", username: user, password: password,
                database: database)
        }
        let tls: PostgresConnection.Configuration.TLS =
            switch self.tls {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        return PostgresConnection.Configuration(
            host: server.host, port: server.port, username: user, password: password, database: database, tls: tls)
    }
}
