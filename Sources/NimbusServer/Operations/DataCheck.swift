import Foundation
import NimbusCore
import NimbusStore

/// `nimbus check`: the embedded store's checks (`EmbeddedCheck`) with the blobs the services' payloads name.
package enum DataCheck {
    /// Checks the data directory, reading the blobs from `blobs` (by default its own folder).
    package static func run(dataDirectory: URL, blobs: (any BlobStore)? = nil) async throws -> CheckReport {
        let data = EmbeddedDataDirectory(dataDirectory)
        let blobs = try blobs ?? LocalBlobStore(directory: data.blobs, creating: false)
        return try await EmbeddedCheck(data: data, blobs: blobs) { kind, payload in
            switch kind {
            case .records:
                // The collector's filter: only payloads holding an asset are decoded.
                guard payload.range(of: StoredRecord.assetMarker) != nil else { return [] }
                return try StoredRecord(payload: payload).assetValues.compactMap { asset in
                    asset.assetID.map { BlobReference.asset(id: $0, checksum: asset.fileChecksum) }
                }
            case .documents:
                guard payload.range(of: ChunkReferences.marker) != nil else { return [] }
                return try JSONDecoder().decode(ChunkReferences.self, from: payload).hashes.map { BlobReference.chunk(hash: $0) }
            default:
                return []
            }
        } expectedIndex: { kind, key, payload in
            switch kind {
            case .records: try RecordIndexer.expectedIndex(name: key, payload: payload)
            case .documents: try DocumentKeys.expectedIndex(key: key, payload: payload)
            default: nil
            }
        }.run()
    }
}
