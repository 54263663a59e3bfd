import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// The calls of an S3-compatible object store the blob store makes, in one bucket under a prefix,
/// path-style (`endpoint/bucket/key`, as self-hosted stores want), each signed with Signature Version 4
/// over AsyncHTTPClient. A call the store answers with a server error or "slow down", or that cannot reach
/// it, is tried again with growing pauses; any other failure is an `S3Error` saying what the store said.
package struct S3Client: Sendable {
    /// Where the objects are and who may reach them.
    package struct Location: Sendable, Hashable {
        package var endpoint: URL
        package var bucket: String
        /// Prepended to every key (`blobs/`, say), so a bucket can hold more than Nimbus.
        package var prefix: String
        package var region: String
        package var accessKeyID: String
        package var secretAccessKey: String

        package init(
            endpoint: URL, bucket: String, prefix: String = "", region: String = "us-east-1", accessKeyID: String,
            secretAccessKey: String
        ) {
            self.endpoint = endpoint
            self.bucket = bucket
            self.prefix = prefix
            self.region = region
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
        }
    }

    /// An object as a listing or a `head` shows it.
    package struct Object: Sendable, Hashable {
        /// Its key without the location's prefix.
        package var key: String
        package var size: Int64
        /// When it was last written (to the second).
        package var lastModified: Date
    }

    package let location: Location
    private let http: HTTPClient
    private let signer: SignatureV4
    /// Attempts of a call whose failure may pass (a server error, "slow down", no connection).
    private let attempts: Int
    private let firstPause: Duration

    /// The client S3 calls go through unless told otherwise, one for the process. A connection that cannot
    /// be made fails the attempt at once (the calls' own retries pause and try again): AsyncHTTPClient's
    /// default retries it until the call's deadline, so a stopped store cost a minute a call.
    package static let sharedHTTP: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(5)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    package init(
        _ location: Location, http: HTTPClient = S3Client.sharedHTTP, attempts: Int = 4, firstPause: Duration = .milliseconds(100)
    ) {
        self.location = location
        self.http = http
        self.signer = SignatureV4(
            accessKeyID: location.accessKeyID, secretAccessKey: location.secretAccessKey, region: location.region)
        self.attempts = attempts
        self.firstPause = firstPause
    }

    /// Makes the bucket; a bucket this account already owns is fine.
    package func createBucket() async throws {
        do {
            _ = try await send("PUT", path: "/\(location.bucket)", expecting: [200])
        } catch let error as S3Error where error.code == "BucketAlreadyOwnedByYou" || error.code == "BucketAlreadyExists" {
            return
        }
    }

    /// Stores an object whole, replacing any under the key.
    package func put(_ key: String, _ bytes: ByteBuffer) async throws {
        _ = try await send("PUT", path: objectPath(key), body: bytes, expecting: [200])
    }

    /// An object's size, or nil when there is none under the key.
    package func size(of key: String) async throws -> Int64? {
        try await head(key)?.size
    }

    /// An object's size and time of writing, or nil when there is none under the key.
    package func head(_ key: String) async throws -> Object? {
        do {
            let response = try await send("HEAD", path: objectPath(key), expecting: [200])
            guard let size = response.headers.first(name: "content-length").flatMap({ Int64($0) }) else {
                throw S3Error(status: 200, code: "MalformedHead", message: "the object store gave no size for \(key)")
            }
            let modified = response.headers.first(name: "last-modified").flatMap(S3Dates.httpDate) ?? .distantPast
            return Object(key: key, size: size, lastModified: modified)
        } catch let error as S3Error where error.status == 404 {
            return nil
        }
    }

    /// Streams an object's bytes, or those at the offsets `range`, to `consume` as they arrive; an
    /// `S3Error` with code `NoSuchKey` when there is none, and one with code `Interrupted` when the store's
    /// answer breaks off. Only a call that failed before its first byte is tried again.
    package func get(_ key: String, range: ClosedRange<Int64>? = nil, into consume: (ByteBuffer) async throws -> Void)
        async throws
    {
        var headers = [(String, String)]()
        if let range { headers.append(("range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        let response = try await send(
            "GET", path: objectPath(key), headers: headers, expecting: range == nil ? [200] : [200, 206], streaming: true)
        var pieces = response.body.makeAsyncIterator()
        while true {
            let piece: ByteBuffer?
            do {
                piece = try await pieces.next()
            } catch {
                throw S3Error(status: 0, code: "Interrupted", message: "the object store's answer for \(key) broke off: \(error)")
            }
            guard let piece else { return }
            try await consume(piece)
        }
    }

    /// Starts a multipart upload of an object (for objects too large to send in one request: every part
    /// but the last holds at least 5 MiB); the upload's id. Nothing is visible under the key until
    /// `completeUpload`.
    package func startUpload(_ key: String) async throws -> String {
        let response = try await send("POST", path: objectPath(key), query: [("uploads", "")], expecting: [200])
        let text = String(decoding: Data(response.bytes.readableBytesView), as: UTF8.self)
        guard let start = text.range(of: "<UploadId>"),
            let end = text.range(of: "</UploadId>", range: start.upperBound..<text.endIndex)
        else { throw S3Error(status: 200, code: "MalformedUpload", message: "the object store gave no upload id for \(key)") }
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// Sends part `number` (from 1) of an upload; the part's ETag, which `completeUpload` names.
    package func uploadPart(_ key: String, upload: String, number: Int, _ bytes: ByteBuffer) async throws -> String {
        let response = try await send(
            "PUT", path: objectPath(key), query: [("partNumber", String(number)), ("uploadId", upload)], body: bytes,
            expecting: [200])
        guard let tag = response.headers.first(name: "etag") else {
            throw S3Error(
                status: 200, code: "MalformedUpload", message: "the object store gave no ETag for part \(number) of \(key)")
        }
        return tag
    }

    /// Makes an upload's parts, in order, the object under its key.
    package func completeUpload(_ key: String, upload: String, parts: [String]) async throws {
        var xml = "<CompleteMultipartUpload>"
        for (index, tag) in parts.enumerated() {
            let escaped = tag.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(escaped)</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let response = try await send(
            "POST", path: objectPath(key), query: [("uploadId", upload)], body: ByteBuffer(string: xml), expecting: [200])
        // S3 may answer 200 and still fail the completion, saying so in the body.
        let text = String(decoding: Data(response.bytes.readableBytesView), as: UTF8.self)
        if text.contains("<Error>") { throw S3Error(status: 200, xml: Data(text.utf8), method: "POST", path: objectPath(key)) }
    }

    /// Abandons an upload and the parts sent.
    package func abortUpload(_ key: String, upload: String) async throws {
        _ = try await send("DELETE", path: objectPath(key), query: [("uploadId", upload)], expecting: [200, 204])
    }

    /// Deletes an object; deleting one that is not there is not an error (as in S3).
    package func delete(_ key: String) async throws {
        _ = try await send("DELETE", path: objectPath(key), expecting: [200, 204])
    }

    /// One page of the objects whose keys start with `prefix` (after the location's), in key order, and
    /// the token of the next page, nil after the last.
    package func list(prefix: String = "", maxKeys: Int = 1000, continuation: String? = nil) async throws
        -> (objects: [Object], next: String?)
    {
        var query = [("list-type", "2"), ("prefix", location.prefix + prefix), ("max-keys", String(maxKeys))]
        if let continuation { query.append(("continuation-token", continuation)) }
        let response = try await send("GET", path: "/\(location.bucket)", query: query, expecting: [200])
        let listing = try ListingParser.parse(Data(response.bytes.readableBytesView))
        let objects = listing.objects.compactMap { object -> Object? in
            guard object.key.hasPrefix(location.prefix) else { return nil }
            return Object(
                key: String(object.key.dropFirst(location.prefix.count)), size: object.size, lastModified: object.lastModified)
        }
        return (objects, listing.truncated ? listing.next : nil)
    }

    private func objectPath(_ key: String) -> String { "/\(location.bucket)/\(location.prefix)\(key)" }

    /// A response: its status and headers, and its body either read (`bytes`) or left to stream (`body`).
    private struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var bytes: ByteBuffer
        var body: HTTPClientResponse.Body
    }

    /// Signs and sends a request, trying again after a failure that may pass.
    private func send(
        _ method: String, path: String, query: [(String, String)] = [], headers extra: [(String, String)] = [],
        body: ByteBuffer? = nil, expecting: Set<Int>, streaming: Bool = false
    ) async throws -> Answer {
        var pause = firstPause
        for attempt in 1...attempts {
            do {
                return try await sendOnce(
                    method, path: path, query: query, headers: extra, body: body, expecting: expecting, streaming: streaming)
            } catch let error as S3Error where error.mayPass && attempt < attempts {
                try await Task.sleep(for: pause)
                pause *= 2
            }
        }
        preconditionFailure("the last attempt returns or throws")
    }

    private func sendOnce(
        _ method: String, path: String, query: [(String, String)], headers extra: [(String, String)], body: ByteBuffer?,
        expecting: Set<Int>, streaming: Bool
    ) async throws -> Answer {
        let payloadHash =
            body.map { body in body.withUnsafeReadableBytes { SignatureV4.hex(SHA256.hash(data: $0)) } }
            ?? SignatureV4.emptyPayloadHash
        let amzDate = SignatureV4.amzDate(Date())
        var host = location.endpoint.host ?? "localhost"
        if let port = location.endpoint.port { host += ":\(port)" }
        let signed = [("host", host), ("x-amz-date", amzDate), ("x-amz-content-sha256", payloadHash)] + extra
        let authorization = signer.authorization(
            SignatureV4.Request(
                method: method, path: path, query: query.map { ($0.0, $0.1) }, headers: signed.map { ($0.0, $0.1) },
                payloadHash: payloadHash),
            amzDate: amzDate)
        var url = location.endpoint.absoluteString
        while url.hasSuffix("/") { url.removeLast() }
        url += SignatureV4.encodedPath(path)
        if !query.isEmpty {
            url += "?" + query.map { SignatureV4.encode($0.0) + "=" + SignatureV4.encode($0.1) }.joined(separator: "&")
        }
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in signed where name != "host" { request.headers.add(name: name, value: value) }
        request.headers.add(name: "authorization", value: authorization)
        if let body { request.body = .bytes(body) }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: .seconds(60))
        } catch {
            throw S3Error(
                status: 0, code: "Unreachable", message: "cannot reach the object store at \(location.endpoint): \(error)")
        }
        let status = Int(response.status.code)
        guard expecting.contains(status) else {
            let text = try await response.body.collect(upTo: 64 << 10)
            throw S3Error(status: status, xml: Data(text.readableBytesView), method: method, path: path)
        }
        if streaming { return Answer(status: status, headers: response.headers, bytes: ByteBuffer(), body: response.body) }
        return Answer(
            status: status, headers: response.headers, bytes: try await response.body.collect(upTo: 16 << 20), body: response.body
        )
    }
}

/// What an S3-compatible store refused, in its words: the HTTP status, S3's error code (`NoSuchBucket`,
/// `SignatureDoesNotMatch`, …; `Unreachable` when no answer came) and its message.
package struct S3Error: Error, CustomStringConvertible, Sendable {
    package var status: Int
    package var code: String
    package var message: String

    package init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The error an answer's XML body states (a HEAD answer has none: its status says it).
    init(status: Int, xml: Data, method: String, path: String) {
        let text = String(decoding: xml, as: UTF8.self)
        func element(_ name: String) -> String? {
            guard let start = text.range(of: "<\(name)>"),
                let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex)
            else { return nil }
            return String(text[start.upperBound..<end.lowerBound])
        }
        let code = element("Code") ?? (status == 404 ? "NotFound" : "HTTP\(status)")
        self.init(status: status, code: code, message: element("Message") ?? "\(method) \(path) answered \(status)")
    }

    /// Whether trying again may succeed: the store failed (5xx), asked to slow down, or did not answer.
    var mayPass: Bool { status >= 500 || status == 0 || code == "SlowDown" }

    package var description: String { "the object store answered \(code) (\(status)): \(message)" }
}

/// The two ways S3 writes a moment: ISO 8601 in listings, the HTTP date in headers.
enum S3Dates {
    static func iso8601(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = text.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        return formatter.date(from: text)
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
