import Foundation
import PostgresNIO

/// Where a PostgreSQL database is, from a connection URL as libpq writes them:
/// `postgres://user:password@host:port/database?sslmode=disable` (or `postgresql://`). A `host` query
/// parameter naming a folder connects through the Unix socket in it.
package struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    package enum TLSMode: String, Sendable {
        /// Plain connections only (loopback, or a network the operator trusts).
        case disable
        /// TLS when the server offers it.
        case prefer
        /// TLS with the server's certificate verified.
        case require
    }

    package var host: String
    package var port: Int
    package var socketFolder: String?
    package var user: String
    package var password: String?
    package var database: String
    package var tls: TLSMode

    package struct InvalidURL: Error, CustomStringConvertible {
        package var description: String
    }

    package init(
        host: String = "127.0.0.1", port: Int = 5432, socketFolder: String? = nil, user: String, password: String? = nil,
        database: String, tls: TLSMode = .prefer
    ) {
        self.host = host
        self.port = port
        self.socketFolder = socketFolder
        self.user = user
        self.password = password
        self.database = database
        self.tls = tls
    }

    package init(url text: String) throws {
        guard let components = URLComponents(string: text), ["postgres", "postgresql"].contains(components.scheme ?? "")
        else {
            throw InvalidURL(description: "a database URL looks like postgres://user:password@host:5432/database")
        }
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
        self.init(
            host: components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1", port: components.port ?? 5432,
            socketFolder: query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }, user: user,
            password: components.percentEncodedPassword.flatMap { $0.removingPercentEncoding } ?? query["password"],
            database: database, tls: tls)
    }

    /// The URL without its password, for logs and answers.
    package var description: String {
        let place = socketFolder.map { "?host=\($0)" } ?? ""
        return "postgres://\(user)@\(host):\(port)/\(database)\(place)"
    }

    var clientConfiguration: PostgresClient.Configuration {
        if let socketFolder {
            return PostgresClient.Configuration(
                unixSocketPath: "\(socketFolder)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        }
        let tls: PostgresClient.Configuration.TLS =
            switch self.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        return PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
    }
}
