import Crypto
import Foundation

/// CloudKit's server-to-server request signing: an ECDSA P-256 signature (SHA-256, DER, base64) over
/// `date:base64(SHA-256(body)):path`, sent in three headers.
///
/// ```swift
/// let headers = try RequestSignature.sign(path: "/database/1/iCloud.com.example/development/public/records/query",
///                                         body: body, keyID: keyID, privateKey: key)
/// ```
package enum RequestSignature {
    package static let keyIDHeader = "X-Apple-CloudKit-Request-KeyID"
    package static let dateHeader = "X-Apple-CloudKit-Request-ISO8601Date"
    package static let signatureHeader = "X-Apple-CloudKit-Request-SignatureV1"
    /// How far a request's date may be from the server's clock.
    package static let freshness: TimeInterval = 10 * 60

    /// What is signed: the date as sent, the body's hash and the URL path (no host, no query).
    package static func message(date: String, body: Data, path: String) -> Data {
        Data("\(date):\(Data(SHA256.hash(data: body)).base64EncodedString()):\(path)".utf8)
    }

    /// The three headers of a signed request, dated `date`.
    package static func sign(path: String, body: Data, keyID: String, privateKey: P256.Signing.PrivateKey, date: Date = Date())
        throws -> [(String, String)]
    {
        let dateText = format(date)
        let signature = try privateKey.signature(for: message(date: dateText, body: body, path: path))
        return [
            (keyIDHeader, keyID), (dateHeader, dateText), (signatureHeader, signature.derRepresentation.base64EncodedString()),
        ]
    }

    /// Checks a signature against a PEM public key; false for anything malformed.
    ///
    /// A request without a body may be signed with the hash of the empty body or with an empty hash field
    /// (`date::path`), as clients differ; both still sign the date and the path, and no body can be added
    /// to such a request without breaking the signature.
    package static func verify(signature: String, date: String, body: Data, path: String, publicKeyPEM: String) -> Bool {
        guard let der = Data(base64Encoded: signature), let signature = try? P256.Signing.ECDSASignature(derRepresentation: der),
            let key = try? P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        else { return false }
        if key.isValidSignature(signature, for: message(date: date, body: body, path: path)) { return true }
        return body.isEmpty && key.isValidSignature(signature, for: Data("\(date)::\(path)".utf8))
    }

    /// Whether `pem` holds an EC P-256 public key.
    package static func isPublicKey(_ pem: String) -> Bool { (try? P256.Signing.PublicKey(pemRepresentation: pem)) != nil }

    /// ISO 8601 in UTC without fractional seconds, as CloudKit wants it.
    package static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    package static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
