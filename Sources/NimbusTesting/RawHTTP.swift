import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusCore
import NimbusKit

/// An HTTP answer as a test inspects it: status, headers and body, however malformed the request was.
package struct RawResponse: Sendable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: Data

    /// The error body's `serverErrorCode`, if the body is an error.
    package var errorCode: ErrorCode? { error?.code }
    package var error: NimbusError? { try? JSONDecoder().decode(NimbusError.self, from: body) }

    package func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: body) }
}

extension TestServer {
    /// The tests' HTTP client: redirects are answers to inspect, never followed (a redirect may name a host
    /// that is not the test server).
    static let rawClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Sends exactly the given request: any method, headers and body bytes.
    package func request(
        _ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], body: Data? = nil
    ) async throws -> RawResponse {
        var request = HTTPClientRequest(url: url.absoluteString + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await Self.rawClient.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        return RawResponse(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }

    /// Sends a JSON body with a session and an API token as headers.
    package func request(
        _ method: HTTPMethod, _ path: String, session: NimbusSession? = nil, apiToken: String? = nil, json: String? = nil
    ) async throws -> RawResponse {
        var headers = [(String, String)]()
        if let session { headers.append(("Authorization", "Bearer \(session.sessionToken)")) }
        if let apiToken { headers.append(("X-Nimbus-API-Token", apiToken)) }
        return try await request(method, path, headers: headers, body: json.map { Data($0.utf8) })
    }
}
