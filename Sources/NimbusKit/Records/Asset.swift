import Foundation
import NimbusCore

/// A file held by a record field (CloudKit's `CKAsset`). Set one made from a local file and save the
/// record: the SDK uploads the file first. A fetched one downloads with `CloudDatabase.download(_:)`.
public struct Asset: Sendable, Hashable, RecordValue {
    /// The local file to upload, for an asset made by the app.
    public let fileURL: URL?
    let value: AssetValue

    public init(fileURL: URL) {
        self.fileURL = fileURL
        self.value = AssetValue()
    }

    public var size: Int64? { value.size }
    /// SHA-256 of the file, base64.
    public var fileChecksum: String? { value.fileChecksum }

    public var fieldValue: FieldValue { .asset(value) }

    public init?(fieldValue: FieldValue) {
        guard case .asset(let value) = fieldValue else { return nil }
        self.fileURL = nil
        self.value = value
    }
}
