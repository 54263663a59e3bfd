import Foundation

/// What a hand decoder throws for a body it does not handle; the caller decodes with `JSONDecoder`.
package struct UnsupportedJSON: Error, Sendable {
    package init() {}
}

/// A wire type that reads itself from a parsed body faster than `Codable` does, declining (by throwing
/// `UnsupportedJSON`) whatever it does not handle: shapes it does not know, and bad values, whose errors
/// `JSONDecoder` words. What it reads must be exactly what `JSONDecoder` reads (`WireDifferentialTests`).
package protocol HandDecodable: Decodable {
    static func byHand(_ tree: JSONTree) throws -> Self
}

extension HandDecodable {
    /// `data` decoded by hand when `byHand` can, with `JSONDecoder` otherwise. A document that is not
    /// JSON is refused here, whichever decoder would read it.
    package static func decode(_ data: Data) throws -> Self {
        try decode(data, tree: try JSONTree(validating: data))
    }

    /// `data` decoded from its parsed `tree` by hand when `byHand` can, with `JSONDecoder` otherwise.
    package static func decode(_ data: Data, tree: JSONTree) throws -> Self {
        do {
            return try byHand(tree)
        } catch {
            return try JSONDecoder().decode(Self.self, from: data)
        }
    }
}

extension JSONTree {
    /// Parses `data`, reporting a document that is not JSON as `DecodingError.dataCorrupted` (the parse
    /// error, with its reason and offset, is the underlying error).
    package init(validating data: Data) throws {
        do {
            self = try JSONTree(parsing: data)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: error.description, underlyingError: error))
        }
    }
}

extension JSONTree {
    /// An optional member: nil when absent or null, as `Codable`'s `decodeIfPresent` reads it; otherwise
    /// `read` must accept it, or the hand decoder declines (and `JSONDecoder` words the error).
    package func optional<T>(_ key: String, _ read: (JSONTree) throws -> T?) throws -> T? {
        guard let member = self[key], !member.isNull else { return nil }
        guard let value = try read(member) else { throw UnsupportedJSON() }
        return value
    }
}
