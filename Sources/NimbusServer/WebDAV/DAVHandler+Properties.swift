import Foundation
import HTTPTypes
import Hummingbird
import NimbusCore
import NimbusStore

/// PROPPATCH: dead properties set and removed, all of a request's or none (RFC 4918 §9.2).
extension DAVHandler {
    func proppatch() async throws -> Response {
        guard container != nil else { throw DAVError(.forbidden, .accessDenied, "/dav/ itself has no properties") }
        let node = try await requireNode()
        return try await proppatch(propertiesOf: node.itemID, collection: node.isCollection)
    }

    /// Applies the request's property updates to the dead properties kept under `key` (an item's ID).
    func proppatch(propertiesOf key: String?, collection: Bool) async throws -> Response {
        guard let body = try await xmlBody(), body.namespace == DAVPropertyName.dav, body.name == "propertyupdate" else {
            throw DAVError.badRequest("a PROPPATCH body is a DAV:propertyupdate")
        }
        let writeGuard = try await writeGuard(.init(path: path))
        var set: [DAVPropertyName: String] = [:]
        var remove: Set<DAVPropertyName> = []
        var order: [DAVPropertyName] = []
        for instruction in body.children where instruction.namespace == DAVPropertyName.dav {
            guard instruction.name == "set" || instruction.name == "remove" else { continue }
            for property in instruction.child("prop")?.children ?? [] {
                order.append(property.key)
                // Instructions apply in document order: a later one on the same property wins.
                if instruction.name == "set" {
                    set[property.key] = property.serialized()
                    remove.remove(property.key)
                } else {
                    remove.insert(property.key)
                    set[property.key] = nil
                }
            }
        }
        guard !order.isEmpty else { throw DAVError.badRequest("the propertyupdate sets or removes no property") }
        // The `DAV:` namespace's properties are the server's own (live); a request touching one changes nothing.
        let protected = order.filter { $0.namespace == DAVPropertyName.dav }
        var xml = DAVXMLWriter()
        xml.open("multistatus", attributes: DAVXMLWriter.multistatusOpening)
        xml.open("response")
        xml.element("href", href(path, collection: collection))
        if protected.isEmpty {
            try await properties.update(key, set: set, remove: remove, guarding: writeGuard)
            Self.writePropstat(order, status: "HTTP/1.1 200 OK", into: &xml)
        } else {
            Self.writePropstat(protected, status: "HTTP/1.1 403 Forbidden", into: &xml)
            let others = order.filter { $0.namespace != DAVPropertyName.dav }
            if !others.isEmpty { Self.writePropstat(others, status: "HTTP/1.1 424 Failed Dependency", into: &xml) }
        }
        xml.close("response")
        xml.close("multistatus")
        return Self.multistatus(xml)
    }

    private static func writePropstat(_ names: [DAVPropertyName], status: String, into xml: inout DAVXMLWriter) {
        xml.open("propstat")
        xml.open("prop")
        var written = Set<DAVPropertyName>()
        for name in names where written.insert(name).inserted { xml.empty(name) }
        xml.close("prop")
        xml.element("status", status)
        xml.close("propstat")
    }
}
