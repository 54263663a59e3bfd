/// Names a zone of the signed-in account across services: the key-value store `TEAM.com.x` is
/// `ZoneAddress(service: .keyValue, name: "TEAM.com.x")`.
public struct ZoneAddress: Hashable, Codable, Sendable, CustomStringConvertible {
    public var service: Service
    public var name: String

    public init(service: Service, name: String) {
        self.service = service
        self.name = name
    }

    public var description: String { "\(service.rawValue):\(name)" }

    public struct Service: RawRepresentable, Hashable, Codable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let keyValue = Service(rawValue: "kv")
    }
}
