import Crypto
import Foundation

/// AWS Signature Version 4 as S3 and S3-compatible stores check it (the `Authorization` header form): a
/// canonical request, a string to sign naming the day, region and service, and a key derived from the
/// secret for that day, region and service. S3's rules: a path is encoded once, segment by segment, and
/// never normalized. `S3Client` signs every call with it.
package struct SignatureV4: Sendable {
    package var accessKeyID: String
    package var secretAccessKey: String
    package var region: String
    package var service: String

    package init(accessKeyID: String, secretAccessKey: String, region: String, service: String = "s3") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.region = region
        self.service = service
    }

    /// What is signed: the method, the path and query as decoded text, the headers to sign (`host` and
    /// `x-amz-date` among them), and the payload's SHA-256 in lowercase hex (or `UNSIGNED-PAYLOAD`).
    package struct Request: Sendable {
        package var method: String
        package var path: String
        package var query: [(name: String, value: String)]
        package var headers: [(name: String, value: String)]
        package var payloadHash: String

        package init(
            method: String, path: String, query: [(name: String, value: String)] = [], headers: [(name: String, value: String)],
            payloadHash: String
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// The SHA-256 of an empty payload, which GET and HEAD requests sign.
    package static let emptyPayloadHash = hex(SHA256.hash(data: Data()))

    /// `20150830T123600Z`: the `x-amz-date` header's form of a moment.
    package static func amzDate(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", parts.year!, parts.month!, parts.day!, parts.hour!, parts.minute!, parts.second!
        )
    }

    /// The `Authorization` header's value for the request at `amzDate` (which its `x-amz-date` must hold).
    package func authorization(_ request: Request, amzDate: String) -> String {
        let (canonical, signedHeaders) = Self.canonicalRequest(request)
        let scope = "\(amzDate.prefix(8))/\(region)/\(service)/aws4_request"
        let toSign = "AWS4-HMAC-SHA256\n\(amzDate)\n\(scope)\n" + Self.hex(SHA256.hash(data: Data(canonical.utf8)))
        var key = SymmetricKey(data: Data("AWS4\(secretAccessKey)".utf8))
        for part in [String(amzDate.prefix(8)), region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(toSign.utf8), using: key))
        return "AWS4-HMAC-SHA256 Credential=\(accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
    }

    /// The canonical request and the list of signed headers.
    static func canonicalRequest(_ request: Request) -> (text: String, signedHeaders: String) {
        let path = encodedPath(request.path)
        let pairs: [(name: String, value: String)] = request.query.map { (encode($0.name), encode($0.value)) }
        // Encoded text is ASCII, so String's order is the bytes' order the rules ask for.
        let sorted = pairs.sorted { first, second in
            first.name == second.name ? first.value < second.value : first.name < second.name
        }
        let query = sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        // Names in lowercase, values trimmed with inner runs of spaces made one; repeated names joined by commas.
        var headers = [String: [String]]()
        for (name, value) in request.headers {
            let collapsed = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            headers[name.lowercased(), default: []].append(collapsed.trimmingCharacters(in: .whitespaces))
        }
        let names = headers.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(headers[$0]!.joined(separator: ","))\n" }.joined()
        let signed = names.joined(separator: ";")
        let text = [request.method, path.isEmpty ? "/" : path, query, canonicalHeaders, signed, request.payloadHash]
            .joined(separator: "\n")
        return (text, signed)
    }

    /// A path encoded segment by segment, its slashes kept: as signed, and as sent.
    static func encodedPath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { encode(String($0)) }.joined(separator: "/")
    }

    /// URI encoding as SigV4 wants it: unreserved characters as they are, every other byte as `%XX`.
    static func encode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                encoded.append(Character(UnicodeScalar(byte)))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
