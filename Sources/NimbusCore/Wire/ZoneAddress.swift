/// Names a zone of an account across services: the key-value store `TEAM.com.x` is
/// `ZoneAddress(service: .keyValue, name: "TEAM.com.x")`, a record zone `ZoneAddress(service:
/// .records(container: …, environment: "development", database: "private"), name: "Lists")`.
package struct ZoneAddress: Hashable, Codable, Sendable, CustomStringConvertible {
    package var service: Service
    package var name: String

    package init(service: Service, name: String) {
        self.service = service
        self.name = name
    }

    package var description: String { "\(service.encoded):\(name)" }

    /// A service of the substrate: which of Nimbus's storage services a zone belongs to, and for those
    /// that live in a container, which container, environment and database. The store keeps the parts
    /// apart, so it can find every zone of a container, an environment or a kind of service.
    package struct Service: Hashable, Sendable, Codable, CustomStringConvertible {
        package enum Kind: String, Sendable, CaseIterable {
            case keyValue = "kv"
            /// A CloudKit-style database: records in zones.
            case records = "db"
            /// The subscriptions of a record database, kept in zones of their own.
            case recordSubscriptions = "subscriptions:db"
            /// A container's documents.
            case documents = "docs"
        }

        package var kind: Kind
        /// The container the service's zones belong to; nil for the key-value store, whose zones are named
        /// by store identifier.
        package var container: String?
        package var environment: String?
        /// For a record database, `private` or `public` (a shared database's zones are their owner's private
        /// ones).
        package var database: String?

        package init(kind: Kind, container: String? = nil, environment: String? = nil, database: String? = nil) {
            self.kind = kind
            self.container = container
            self.environment = environment
            self.database = database
        }

        package static let keyValue = Service(kind: .keyValue)

        package static func records(container: String, environment: String, database: String) -> Service {
            Service(kind: .records, container: container, environment: environment, database: database)
        }

        package static func recordSubscriptions(container: String, environment: String, database: String) -> Service {
            Service(kind: .recordSubscriptions, container: container, environment: environment, database: database)
        }

        package static func documents(container: String, environment: String) -> Service {
            Service(kind: .documents, container: container, environment: environment)
        }

        /// The service as stored and sent: its kind, then its container, environment and database, joined by
        /// colons (`kv`, `db:iCloud.com.x:development:private`, `docs:iCloud.com.x:production`).
        package var encoded: String {
            ([kind.rawValue] + [container, environment, database].compactMap { $0 }).joined(separator: ":")
        }

        package var description: String { encoded }

        /// Reads the stored form back; nil for text no service writes.
        package init?(encoded: String) {
            guard
                let kind = Kind.allCases.sorted(by: { $0.rawValue.count > $1.rawValue.count }).first(where: {
                    encoded == $0.rawValue || encoded.hasPrefix($0.rawValue + ":")
                })
            else { return nil }
            let parts = encoded.dropFirst(kind.rawValue.count).split(separator: ":", omittingEmptySubsequences: false).dropFirst()
                .map(String.init)
            switch (kind, parts.count) {
            case (.keyValue, 0): self.init(kind: kind)
            case (.records, 3), (.recordSubscriptions, 3):
                self.init(kind: kind, container: parts[0], environment: parts[1], database: parts[2])
            case (.documents, 2): self.init(kind: kind, container: parts[0], environment: parts[1])
            default: return nil
            }
        }

        package init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let service = Service(encoded: text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "\(text) is not a service"))
            }
            self = service
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(encoded)
        }
    }
}
