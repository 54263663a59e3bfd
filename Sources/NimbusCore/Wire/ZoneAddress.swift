/// Names a zone of the signed-in account across services: the key-value store `TEAM.com.x` is
/// `ZoneAddress(service: .keyValue, name: "TEAM.com.x")`.
package struct ZoneAddress: Hashable, Codable, Sendable, CustomStringConvertible {
    package var service: Service
    package var name: String

    package init(service: Service, name: String) {
        self.service = service
        self.name = name
    }

    package var description: String { "\(service.rawValue):\(name)" }

    package struct Service: RawRepresentable, Hashable, Codable, Sendable {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package static let keyValue = Service(rawValue: "kv")
    }
}
