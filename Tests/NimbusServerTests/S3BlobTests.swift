import Crypto
import Foundation
import NIOCore
import NimbusCore
import NimbusStore
import NimbusTesting
import Testing

@testable import NimbusServer

/// A server whose blobs are in an S3-compatible bucket (a real SeaweedFS): document chunks and asset files
/// go there and come back, the data directory says so (so `nimbus backup` refuses it), a bucket that
/// cannot be used stops the start, and a store that went away fails transfers with an answer to wait.
@Suite(.cleansUp) struct S3BlobTests {
    func bucket(_ store: TemporarySeaweedFS, secret: String? = nil) -> S3Client.Location {
        store.bucket(prefix: "node/", secret: secret)
    }

    @Test func chunksAndAssetsLiveInTheBucket() async throws {
        let store = try await TemporarySeaweedFS.start()
        let location = bucket(store)
        try await S3Client(location).createBucket()
        let documents = try await DocumentRouteTests.Fixture.make { $0.blobs = .s3(location) }
        let server = documents.server

        // A document: its chunk stored in the bucket, the file saved, read back whole and by range.
        let text = "Kept in an object store, not on this machine's disk."
        let saved = try await documents.save("note", "Note.txt", text)
        #expect(saved.outcome == .applied)
        let hash = DocumentRouteTests.Fixture.hash(Data(text.utf8))
        #expect(try await S3Client(location).list().objects.map(\.key).contains(hash))
        let fetched = try await documents.fetch([hash])
        #expect(fetched.status == 200 && (try? ChunkBundle.decode(fetched.body))?.first?.bytes == Data(text.utf8))
        let part = try await server.request(
            .GET, documents.blobs + "/" + hash,
            headers: [
                ("Authorization", "Bearer \(documents.ann.sessionToken)"), ("X-Nimbus-API-Token", documents.app.apiToken),
                ("Range", "bytes=0-5"),
            ])
        #expect(part.status == 206 && part.body == Data("Kept i".utf8))

        // An asset file: uploaded, saved into a record, downloaded through its link.
        let records = DatabaseFixture(server: server, app: documents.app, ann: documents.ann)
        let tokens = try await records.post("assets/upload", #"{"tokens":[{"recordType":"Photos","fieldName":"image"}]}"#)
        let url = try #require(try tokens.decode(AssetUploadResponse.self).tokens.first?.url)
        let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 13) })
        let uploaded = try await server.request(.POST, String(url.dropFirst(server.url.absoluteString.count)), body: bytes)
        let receipt = try #require(try uploaded.decode(AssetUploadResult.self).singleFile.receipt)
        let saves = try await records.modify(
            #"{"operations":[{"operationType":"create","record":{"recordName":"p","recordType":"Photos","fields":{"image":{"value":{"receipt":"\#(receipt)"},"type":"ASSETID"}}}}]}"#
        )
        guard case .asset(let asset) = saves.first?.record?.fields?["image"], let link = asset.downloadURL else {
            Issue.record("the record holds no asset: \(saves)")
            return
        }
        #expect(try await server.request(.GET, String(link.dropFirst(server.url.absoluteString.count))).body == bytes)
        #expect(try await S3Client(location).list().objects.count >= 2)
        #expect(
            !FileManager.default.fileExists(
                atPath: EmbeddedDataDirectory(server.dataDirectory).blobs.appendingPathComponent(hash).path))
        #expect(EmbeddedDataDirectory(server.dataDirectory).remoteBlobs?.hasPrefix("s3://nimbus/node/") == true)

        // The store gone: a transfer is answered "try again later", and what needs no blob goes on.
        store.stop()
        let lost = try await documents.fetch([hash])
        #expect(lost.status == 503 && lost.errorCode == .tryAgainLater, "\(String(decoding: lost.body, as: UTF8.self))")
        #expect(try await documents.changes().items.contains { $0.itemID == "note" })
    }

    /// `nimbus check` reads the blobs live entries name from the bucket: whole ones pass, and one whose bytes
    /// were changed in the bucket, or that was deleted from it, is reported.
    @Test func aCheckReadsTheBlobsInTheBucket() async throws {
        let store = try await TemporarySeaweedFS.start()
        let location = bucket(store)
        try await S3Client(location).createBucket()
        let documents = try await DocumentRouteTests.Fixture.make { $0.blobs = .s3(location) }
        let (kept, changed, deleted) = ("Kept as written.", "Changed in the bucket.", "Deleted from the bucket.")
        for (name, text) in [("kept", kept), ("changed", changed), ("deleted", deleted)] {
            #expect(try await documents.save(name, "\(name).txt", text).outcome == .applied)
        }
        let blobs = S3BlobStore(
            client: S3Client(location),
            decisions: ProcessDecisionLock(sweepGate: EmbeddedDataDirectory(documents.server.dataDirectory).blobSweepGate))
        let directory = documents.server.dataDirectory
        let healthy = try await DataCheck.run(dataDirectory: directory, blobs: blobs)
        #expect(healthy.isHealthy, "\(healthy.problems)")
        #expect(
            healthy.checked.contains {
                $0.hasPrefix("blobs: 3 named by live entries, \(kept.utf8.count + changed.utf8.count + deleted.utf8.count) bytes")
            }, "\(healthy.checked)")

        let (changedHash, deletedHash) = (
            DocumentRouteTests.Fixture.hash(Data(changed.utf8)), DocumentRouteTests.Fixture.hash(Data(deleted.utf8))
        )
        try await S3Client(location).put(changedHash, ByteBuffer(string: "Not what was written."))
        try await S3Client(location).delete(deletedHash)
        let damaged = try await DataCheck.run(dataDirectory: directory, blobs: blobs)
        #expect(
            damaged.problems.sorted()
                == [
                    "blob \(deletedHash) is named by a live entry and missing",
                    "chunk \(changedHash) holds bytes whose SHA-256 is \(DocumentRouteTests.Fixture.hash(Data("Not what was written.".utf8)))",
                ].sorted(), "\(damaged.problems)")
    }

    @Test func aBucketThatCannotBeUsedStopsTheStart() async throws {
        let store = try await TemporarySeaweedFS.start()
        try await S3Client(bucket(store)).createBucket()
        let wrongSecret = await #expect(throws: StoreConfigurationError.self) {
            _ = try await TestServer.start { $0.blobs = .s3(bucket(store, secret: "wrong")) }
        }
        #expect(wrongSecret?.description.contains("SignatureDoesNotMatch") == true, "\(String(describing: wrongSecret))")
        var missing = bucket(store)
        missing.bucket = "no-such-bucket"
        let noBucket = await #expect(throws: StoreConfigurationError.self) {
            _ = try await TestServer.start { $0.blobs = .s3(missing) }
        }
        #expect(noBucket?.description.contains("NoSuchBucket") == true, "\(String(describing: noBucket))")
    }
}
