import Foundation
import NIOCore
import NimbusCore

/// The document and chunk routes of the wire protocol, one call each, for one container environment
/// of the signed-in user. The device's sync engine and the CLI build on it.
package struct DocumentClient: Sendable {
    package let client: NimbusClient
    package let container: String
    package let environment: String

    private var documents: String { "/documents/1/\(container)/\(environment)" }
    private var blobs: String { "/blobs/1/\(container)/\(environment)" }

    package init(client: NimbusClient, container: String, environment: String = "development") {
        self.client = client
        self.container = container
        self.environment = environment
    }

    package func changes(since syncToken: String?) async throws -> DocumentChangesResponse {
        try await client.send(.POST, documents + "/changes", body: DocumentChangesRequest(syncToken: syncToken))
    }

    package func modify(_ operations: [DocumentOperation], device: String? = nil) async throws -> DocumentModifyResponse {
        try await client.send(.POST, documents + "/modify", body: DocumentModifyRequest(operations: operations, device: device))
    }

    package func versions(of itemID: String) async throws -> DocumentVersionsResponse {
        try await client.send(.POST, documents + "/versions", body: DocumentVersionsRequest(itemID: itemID))
    }

    package func trash() async throws -> DocumentTrashResponse {
        try await client.send(.GET, documents + "/trash")
    }

    /// Which of the chunks the caller must upload.
    package func missing(_ hashes: [String]) async throws -> [String] {
        let response: ChunksMissingResponse = try await client.send(
            .POST, blobs + "/missing", body: ChunksMissingRequest(hashes: hashes))
        return response.missing
    }

    package func upload(chunk bytes: ByteBuffer, hash: String) async throws {
        _ = try await client.sendBytes(.PUT, blobs + "/" + hash, body: bytes)
    }

    /// Tells the account's other devices that these stored chunks of a large file's coming version, from
    /// position `from` in its chunk list, can be downloaded now (`ChunksAnnouncement`).
    package func announce(_ itemID: String, from: Int, chunks: [DocumentChunk]) async throws {
        _ = try await client.sendRaw(
            .POST, blobs + "/announce",
            body: try JSONEncoder().encode(ChunksAnnouncement(itemID: itemID, from: from, chunks: chunks)))
    }

    /// Uploads many chunks in one request (`ChunkBundle`'s limits).
    package func upload(bundle chunks: [ChunkBundle.Chunk]) async throws {
        _ = try await client.sendBytes(.POST, blobs + "/upload", body: ByteBuffer(bytes: ChunkBundle.encode(chunks)))
    }

    /// Downloads many chunks in one request, checking that the server sent those asked for, in order.
    package func fetch(_ hashes: [String]) async throws -> [ChunkBundle.Chunk] {
        let body = try await client.sendRaw(
            .POST, blobs + "/fetch", body: try JSONEncoder().encode(ChunksFetchRequest(hashes: hashes)))
        guard let chunks = try? ChunkBundle.decode(body), chunks.map(\.hash) == hashes else {
            throw NimbusError(.internalError, "the server answered with other chunks than those asked for")
        }
        return chunks
    }

    package func download(chunk hash: String) async throws -> ByteBuffer {
        try await client.sendBytes(.GET, blobs + "/" + hash, body: nil)
    }

    /// `download(chunk:)` into `buffer`, emptied first (`NimbusClient.sendBytes(_:_:body:into:)`).
    package func download(chunk hash: String, into buffer: consuming ByteBuffer) async throws -> ByteBuffer {
        try await client.sendBytes(.GET, blobs + "/" + hash, body: nil, into: consume buffer)
    }
}
