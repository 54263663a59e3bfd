import Foundation
import NimbusCore

/// Signed, expiring download URLs for asset fields: `…/assets/1/download/{assetID}?expires=…&signature=…`.
/// Anyone holding one can download the file until it expires, as with CloudKit's download URLs; records
/// fetched again get fresh ones.
struct AssetLinks: Sendable {
    let baseURL: String
    let key: [UInt8]
    let now: Date

    static let lifetime: TimeInterval = 60 * 60

    func url(assetID: String) -> String {
        let expires = now.addingTimeInterval(Self.lifetime).milliseconds
        return
            "\(baseURL)/assets/1/download/\(assetID)?expires=\(expires)&signature=\(Self.signature(key: key, assetID: assetID, expires: expires))"
    }

    static func signature(key: [UInt8], assetID: String, expires: Int64) -> String {
        Secrets.hmac(key: key, "download:\(assetID):\(expires)")
    }

    /// The record with a download URL on every asset it holds.
    func apply(_ record: RecordWire) -> RecordWire {
        guard let fields = record.fields, fields.values.contains(where: Self.holdsAsset) else { return record }
        var linked = record
        linked.fields = fields.mapValues(link)
        return linked
    }

    func apply(_ result: RecordResult) -> RecordResult {
        switch result {
        case .record(let record):
            return .record(apply(record))
        case .failure(var failure):
            failure.serverRecord = failure.serverRecord.map { apply($0) }
            return .failure(failure)
        }
    }

    private func link(_ value: FieldValue) -> FieldValue {
        switch value {
        case .asset(var asset):
            asset.downloadURL = asset.assetID.map(url(assetID:))
            return .asset(asset)
        case .list(let values, let elementType): return .list(values.map(link), elementType: elementType)
        default: return value
        }
    }

    private static func holdsAsset(_ value: FieldValue) -> Bool {
        switch value {
        case .asset: true
        case .list(let values, _): values.contains(where: holdsAsset)
        default: false
        }
    }
}
