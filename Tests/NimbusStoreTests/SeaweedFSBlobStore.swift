import Foundation
import NimbusStore
import NimbusTestingCore

extension TemporarySeaweedFS {
    /// A blob store on a new bucket of this store (blobs under `blobs/`), and its client.
    func blobStore() async throws -> (blobs: S3BlobStore, client: S3Client) {
        let client = S3Client(
            S3Client.Location(
                endpoint: endpoint, bucket: "nimbus", prefix: "blobs/", accessKeyID: accessKeyID,
                secretAccessKey: secretAccessKey))
        try await client.createBucket()
        let folder = TestResources.temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let gate = folder.appendingPathComponent("blobs.lock")
        return (S3BlobStore(client: client, decisions: ProcessDecisionLock(sweepGate: gate)), client)
    }
}
