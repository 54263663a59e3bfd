import NimbusStore
import NimbusTestingCore

extension TemporarySeaweedFS {
    /// A bucket of this store as a server is given it: named `name`, blobs under `prefix`, signed with this
    /// store's credentials (or with `secret`, to be refused).
    package func bucket(_ name: String = "nimbus", prefix: String = "", secret: String? = nil) -> S3Client.Location {
        S3Client.Location(
            endpoint: endpoint, bucket: name, prefix: prefix, accessKeyID: accessKeyID,
            secretAccessKey: secret ?? secretAccessKey)
    }
}
