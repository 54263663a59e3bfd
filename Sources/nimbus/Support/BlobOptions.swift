import ArgumentParser
import Foundation
import NimbusServer
import NimbusStore

/// Where a server keeps its blobs: the data directory by default, or a bucket of an S3-compatible object
/// store (path-style addressing, as self-hosted stores want), with the AWS tools' environment variables.
struct BlobOptions: ParsableArguments {
    @Option(
        help: """
            An S3-compatible bucket and key prefix to keep blobs (assets, document chunks) in, like \
            s3://nimbus-blobs/production; by default the data directory's blobs/. [env: NIMBUS_BLOBS]
            """)
    var blobs: String? = Environment.string("NIMBUS_BLOBS")

    @Option(help: "The object store's URL, like https://s3.example.com:9000. [env: AWS_ENDPOINT_URL]")
    var blobsEndpoint: String? = Environment.string("AWS_ENDPOINT_URL")

    @Option(help: "The bucket's region. [env: AWS_REGION]")
    var blobsRegion: String = Environment.string("AWS_REGION") ?? "us-east-1"

    @Option(help: "The access key id (prefer the environment: flags show in process lists). [env: AWS_ACCESS_KEY_ID]")
    var blobsAccessKeyId: String? = Environment.string("AWS_ACCESS_KEY_ID")

    @Option(help: "The secret access key (prefer the environment). [env: AWS_SECRET_ACCESS_KEY]")
    var blobsSecretAccessKey: String? = Environment.string("AWS_SECRET_ACCESS_KEY")

    func location() throws -> BlobLocation {
        guard let blobs else { return .dataDirectory }
        guard let url = URL(string: blobs), url.scheme == "s3", let bucket = url.host, !bucket.isEmpty else {
            throw ValidationError("--blobs must be like s3://bucket or s3://bucket/prefix, not \(blobs)")
        }
        guard let endpointText = blobsEndpoint, let endpoint = URL(string: endpointText),
            endpoint.scheme == "http" || endpoint.scheme == "https", endpoint.host != nil
        else {
            throw ValidationError(
                "--blobs needs the object store's URL: --blobs-endpoint or AWS_ENDPOINT_URL, like https://s3.example.com")
        }
        guard let accessKey = blobsAccessKeyId, let secret = blobsSecretAccessKey else {
            throw ValidationError("--blobs needs credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        }
        var prefix = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        if !prefix.isEmpty, !prefix.hasSuffix("/") { prefix += "/" }
        return .s3(
            S3Client.Location(
                endpoint: endpoint, bucket: bucket, prefix: prefix, region: blobsRegion, accessKeyID: accessKey,
                secretAccessKey: secret))
    }

    /// The store to read `data`'s blobs from: its own folder, or the bucket its server keeps them in, which
    /// these options must name (so a check or backup never reads another bucket, nor an empty folder, as the
    /// blobs). `decisions` keeps a backup and the servers' sweeps apart; by default, as the embedded server does.
    func store(reading data: EmbeddedDataDirectory, decisions: (any BlobDecisionLock)? = nil) throws -> any BlobStore {
        switch (try location(), data.remoteBlobs) {
        case (.dataDirectory, nil):
            return try LocalBlobStore(directory: data.blobs, creating: false)
        case (.dataDirectory, let place?):
            throw CLIError(
                "this data directory's server keeps its blobs in \(place): name them with --blobs and the endpoint and "
                    + "credentials, as for serve")
        case (.s3(let bucket), let place):
            let named = "s3://\(bucket.bucket)/\(bucket.prefix)"
            guard let place, place.hasPrefix(named + " ") else {
                throw CLIError("--blobs names \(named), but this data directory's blobs are in \(place ?? "its blobs folder")")
            }
            return S3BlobStore(
                client: S3Client(bucket), decisions: decisions ?? ProcessDecisionLock(sweepGate: data.blobSweepGate))
        }
    }

    /// The bucket a restore writes `data`'s blobs into, when these options name one (nil: its folder).
    func bucket(restoringInto data: EmbeddedDataDirectory) throws -> (any BlobStore)? {
        guard case .s3(let bucket) = try location() else { return nil }
        // Nothing sweeps while a restore writes: no server runs on the database until it is restored.
        return S3BlobStore(client: S3Client(bucket), decisions: ProcessDecisionLock(sweepGate: data.blobSweepGate))
    }
}
