import AsyncHTTPClient
import Foundation
import NIOCore
import NimbusCore
import NimbusKit

/// A CloudKit Web Services client as a browser runs one: JSON bodies sent as `text/plain`, the API token
/// and the web auth token as query parameters, connections kept alive; no Nimbus SDK.
package struct PlainCloudKitClient: Sendable {
    let http: HTTPClient
    let modifyURL: String
    let lookupURL: String

    package init(server: ServerProcess, session: NimbusSession, connections: Int) {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let token = session.sessionToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let base = "\(server.url.absoluteString)/database/1/\(server.container)/development/private/records/"
        let credentials = "?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(token)"
        modifyURL = base + "modify" + credentials
        lookupURL = base + "lookup" + credentials
    }

    /// Fetches one record by name (which need not exist): the same route work as a save, without a write.
    package func lookUp(_ name: String) async throws {
        try await post(lookupURL, #"{"records":[{"recordName":"\#(name)"}]}"#, expecting: "records")
    }

    /// Creates one record with an untyped text field, as a web page saving a note would.
    package func createNote() async throws {
        try await post(
            modifyURL,
            #"{"operations":[{"operationType":"create","record":{"recordType":"Notes","fields":{"text":{"value":"a note"}}}}]}"#,
            expecting: "recordChangeTag")
    }

    private func post(_ url: String, _ json: String, expecting word: String) async throws {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "text/plain;charset=UTF-8")
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok, String(buffer: body).contains(word) else {
            throw NimbusError(.internalError, "\(url) answered \(response.status): \(String(buffer: body))")
        }
    }

    package func shutdown() async throws { try await http.shutdown() }
}
