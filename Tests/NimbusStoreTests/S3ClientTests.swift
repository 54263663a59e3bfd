import Foundation
import NIOCore
import NimbusStore
import NimbusTestingCore
import Testing

/// The object store calls the S3 blob backend makes, against a real S3-compatible server (SeaweedFS),
/// and the store's refusals as errors that say what happened.
@Suite(.cleansUp) struct S3ClientTests {
    func client(
        _ store: TemporarySeaweedFS, bucket: String = "nimbus", prefix: String = "blobs/", secret: String? = nil,
        attempts: Int = 4
    )
        -> S3Client
    {
        S3Client(
            S3Client.Location(
                endpoint: store.endpoint, bucket: bucket, prefix: prefix, accessKeyID: store.accessKeyID,
                secretAccessKey: secret ?? store.secretAccessKey), attempts: attempts, firstPause: .milliseconds(20))
    }

    func get(_ key: String, range: ClosedRange<Int64>? = nil, from client: S3Client) async throws -> Data {
        var bytes = Data()
        try await client.get(key, range: range) { bytes.append(contentsOf: $0.readableBytesView) }
        return bytes
    }

    @Test func objectsAreStoredReadListedAndDeleted() async throws {
        let store = try await TemporarySeaweedFS.start()
        let client = self.client(store)
        try await client.createBucket()
        try await client.createBucket()  // already there: fine
        var generator = SeededGenerator(seed: 31)
        let bytes = generator.bytes(300_000)
        // Keys as the blob store names them, and one that needs encoding in a path.
        let keys = ["0a" + String(repeating: "1", count: 62), "dir/a b+c/é ☕︎.bin", "z"]
        for key in keys { try await client.put(key, ByteBuffer(bytes: bytes)) }
        for key in keys {
            #expect(try await client.size(of: key) == 300_000, "\(key)")
            #expect(try await get(key, from: client) == bytes)
        }
        #expect(try await get(keys[1], range: 1000...1999, from: client) == bytes.subdata(in: 1000..<2000))
        #expect(try await get(keys[1], range: 299_990...299_999, from: client) == bytes.suffix(10))

        // Listed in key order, without the location's prefix, a page at a time.
        var listed = [S3Client.Object]()
        var next: String? = nil
        var pages = 0
        repeat {
            let page = try await client.list(maxKeys: 2, continuation: next)
            listed += page.objects
            next = page.next
            pages += 1
        } while next != nil
        #expect(listed.map(\.key) == keys.sorted() && listed.allSatisfy { $0.size == 300_000 })
        #expect(pages == 2)
        #expect(try await client.list(prefix: "dir/").objects.map(\.key) == [keys[1]])

        try await client.delete(keys[0])
        try await client.delete(keys[0])  // gone already: fine
        #expect(try await client.size(of: keys[0]) == nil)
        let missing = await #expect(throws: S3Error.self) { _ = try await get(keys[0], from: client) }
        #expect(missing?.code == "NoSuchKey" && missing?.status == 404, "\(String(describing: missing))")
        // Another prefix in the same bucket sees none of them.
        #expect(try await self.client(store, prefix: "other/").list().objects.isEmpty)
    }

    @Test func aLargeObjectGoesUpInParts() async throws {
        let store = try await TemporarySeaweedFS.start()
        let client = self.client(store)
        try await client.createBucket()
        let part = 5 << 20
        var generator = SeededGenerator(seed: 11)
        let bytes = generator.bytes(2 * part + 12_345)
        let upload = try await client.startUpload("large")
        var tags = [String]()
        for (number, start) in stride(from: 0, to: bytes.count, by: part).enumerated() {
            let piece = bytes.subdata(in: start..<min(bytes.count, start + part))
            tags.append(try await client.uploadPart("large", upload: upload, number: number + 1, ByteBuffer(bytes: piece)))
        }
        #expect(try await client.size(of: "large") == nil, "nothing visible before the upload completes")
        try await client.completeUpload("large", upload: upload, parts: tags)
        #expect(try await client.size(of: "large") == Int64(bytes.count))
        #expect(try await get("large", from: client) == bytes)
        #expect(
            try await get("large", range: Int64(part - 10)...Int64(part + 9), from: client)
                == bytes.subdata(in: part - 10..<part + 10))

        // An abandoned upload leaves nothing.
        let abandoned = try await client.startUpload("abandoned")
        _ = try await client.uploadPart("abandoned", upload: abandoned, number: 1, ByteBuffer(bytes: bytes.prefix(part)))
        try await client.abortUpload("abandoned", upload: abandoned)
        #expect(try await client.size(of: "abandoned") == nil)
        let unknown = await #expect(throws: S3Error.self) {
            try await client.completeUpload("abandoned", upload: abandoned, parts: ["\"x\""])
        }
        #expect(unknown?.code == "NoSuchUpload", "\(String(describing: unknown))")
    }

    @Test func refusalsSayWhatTheStoreSaid() async throws {
        let store = try await TemporarySeaweedFS.start()
        try await client(store).createBucket()
        let forged = await #expect(throws: S3Error.self) {
            try await client(store, secret: "not the secret").put("k", ByteBuffer(string: "x"))
        }
        #expect(forged?.code == "SignatureDoesNotMatch" && forged?.status == 403, "\(String(describing: forged))")
        let noBucket = await #expect(throws: S3Error.self) {
            try await client(store, bucket: "no-such-bucket").put("k", ByteBuffer(string: "x"))
        }
        let notListed = await #expect(throws: S3Error.self) { _ = try await client(store, bucket: "no-such-bucket").list() }
        #expect(notListed?.code == "NoSuchBucket", "\(String(describing: notListed))")
        #expect(noBucket?.code == "NoSuchBucket" && noBucket?.status == 404, "\(String(describing: noBucket))")
        #expect(noBucket?.description.contains("NoSuchBucket") == true)

        // A stopped store: each call tried again, then an error naming the endpoint.
        let patient = client(store, attempts: 3)
        store.stop()
        let unreachable = await #expect(throws: S3Error.self) { _ = try await patient.size(of: "k") }
        #expect(unreachable?.code == "Unreachable" && unreachable?.message.contains("127.0.0.1:\(store.s3Port)") == true)
    }
}

/// What the S3 blob store leaves in its bucket beyond blobs.
@Suite(.cleansUp) struct S3BlobStoreBucketTests {
    /// A retain's marker protects its blob for the sweep's grace, then goes with the next sweep: a bucket
    /// does not keep one object more per chunk ever retained.
    @Test func retainMarkersGoOnceOld() async throws {
        let (blobs, client) = try await TemporarySeaweedFS.start().blobStore()
        let writer = try await blobs.makeWriter(maxBytes: 100)
        try await writer.write(Data("kept".utf8))
        let kept = try await writer.finish()
        #expect(try await blobs.retain([kept.id]) == [kept.id])
        #expect(try await client.list(prefix: "retained/").objects.map(\.key) == ["retained/" + kept.id])
        #expect(try await blobs.sweep(keeping: [kept.id], writtenBefore: Date().addingTimeInterval(3600)) == 0)
        #expect(try await client.list(prefix: "retained/").objects.isEmpty, "the old marker went")
        #expect(try await blobs.size(kept.id) == 4)
    }
}
