import Foundation
import Hummingbird
import NIOCore
import NimbusCore

/// Decodes JSON request bodies with a size limit, turning every failure into a `BAD_REQUEST` or
/// `REQUEST_TOO_LARGE` that says what was wrong and where.
package struct WireDecoder: RequestDecoder {
    /// Large enough for a full key-value batch (1 MiB of values, base64 and JSON overhead included).
    package static let maxBodyBytes = 4 << 20
    /// A new error each time: every error answered carries its own uuid.
    static var tooLarge: NimbusError { NimbusError(.requestTooLarge, "the request body is larger than \(maxBodyBytes) bytes") }

    package init() {}

    package func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: Self.maxBodyBytes, orThrow: Self.tooLarge)
        } catch let error as NimbusError {
            throw error
        } catch {
            // The client went away or broke the body off: nothing was read, so nothing happens.
            throw NimbusError.badRequest("the request body ended before it was complete")
        }
        return try Self.decode(type, from: Data(buffer: buffer))
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(NimbusError) -> T {
        do {
            // Whatever `JSONDecoder` would let through, a body must be JSON as the hand decoders read it.
            let tree = try JSONTree(validating: data)
            if let hand = type as? any HandDecodable.Type { return try hand.decode(data, tree: tree) as! T }
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw .badRequest("malformed request body: \(Self.describe(error))")
        } catch {
            throw .badRequest("malformed request body: not JSON")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.isEmpty
                ? "the body" : codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(let type, let context): return "\(path(context.codingPath)) should be \(type)"
        case .valueNotFound(let type, let context): return "\(path(context.codingPath)) should be \(type), found null"
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])) is required"
        case .dataCorrupted(let context):
            guard context.codingPath.isEmpty else { return "\(path(context.codingPath)): \(context.debugDescription)" }
            if let parse = context.underlyingError as? JSONTree.ParseError {
                return "not valid JSON (\(parse.reason) at byte \(parse.offset))"
            }
            return "not valid JSON"
        @unknown default: return "unreadable"
        }
    }
}
