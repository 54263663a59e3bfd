import Hummingbird
import NIOCore
import NimbusCore
import Synchronization

/// Checks every answer against the OpenAPI document while the server runs in tests: the status must be
/// one the operation documents, and a JSON body must conform to the schema documented for that status.
/// What does not conform is collected (`violations`), so a test fails on an answer the document does
/// not describe, whatever produced it: a route, an SDK call, an error.
package final class DocumentConformance: Sendable {
    private let check = SchemaCheck()
    private let operations: [(method: String, segments: [Substring], responses: [(String, JSONValue)])]
    private let found = Mutex<[String]>([])

    package init() {
        var operations = [(method: String, segments: [Substring], responses: [(String, JSONValue)])]()
        for (path, methods) in OpenAPIDocument.document["paths"]?.members ?? [] {
            for (method, operation) in methods.members ?? [] {
                operations.append((method, path.split(separator: "/"), operation["responses"]?.members ?? []))
            }
        }
        self.operations = operations
    }

    /// What did not conform so far.
    package var violations: [String] { found.withLock { $0 } }

    func record(method: String, path: String, status: Int, contentType: String?, body: ByteBuffer?) {
        let segments = path.split(separator: "/")
        guard
            let operation = operations.first(where: { operation in
                operation.method == method && operation.segments.count == segments.count
                    && zip(operation.segments, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
            })
        else { return }
        let where_ = "\(method.uppercased()) \(path) → \(status)"
        guard let response = operation.responses.first(where: { $0.0 == String(status) })?.1 else {
            found.withLock { $0.append("\(where_): the document lists \(operation.responses.map(\.0)), not \(status)") }
            return
        }
        guard let content = response["content"]?.members else { return }
        let mediaType = contentType?.split(separator: ";").first.map { String($0).trimmingCharacters(in: .whitespaces) }
        guard let documented = content.first(where: { $0.0 == mediaType })?.1 else {
            found.withLock {
                $0.append(
                    "\(where_): the document says \(content.map(\.0)), the answer is \(contentType ?? "without a content type")")
            }
            return
        }
        guard let schema = documented["schema"], mediaType == "application/json" else { return }
        guard let body, let tree = try? JSONTree(parsing: body.readableBytesView) else {
            found.withLock { $0.append("\(where_): the answer is not JSON") }
            return
        }
        let problems = check.problems(tree, against: schema)
        if !problems.isEmpty {
            found.withLock { $0.append("\(where_): " + problems.prefix(5).joined(separator: "; ")) }
        }
    }
}

/// The middleware of `DocumentConformance`: reads each JSON answer whole, checks it, and passes it on.
struct DocumentConformanceMiddleware<Context: RequestContext>: RouterMiddleware {
    let conformance: DocumentConformance

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response
    {
        var response = try await next(request, context)
        let contentType = response.headers[.contentType]
        var body: ByteBuffer?
        if contentType?.hasPrefix("application/json") == true {
            let collector = Collected()
            try await response.body.write(CollectingWriter(collected: collector))
            let bytes = collector.buffer.withLock { $0 }
            body = bytes
            response.body = ResponseBody(byteBuffer: bytes)
        }
        conformance.record(
            method: request.method.rawValue.lowercased(), path: request.uri.path, status: response.status.code,
            contentType: contentType,
            body: body)
        return response
    }

    final class Collected: Sendable {
        let buffer = Mutex(ByteBuffer())
    }

    struct CollectingWriter: ResponseBodyWriter {
        let collected: Collected

        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            collected.buffer.withLock { $0.writeBuffer(&buffer) }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
