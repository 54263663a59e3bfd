import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NimbusCore
import NimbusStore

/// PROPFIND, GET and HEAD.
extension DAVHandler {
    /// What a PROPFIND asks for.
    enum PropertyRequest {
        case all
        case names
        case some([DAVPropertyName])
    }

    func propfind() async throws -> Response {
        // A listing of a whole tree in one answer is refused, as RFC 4918 allows: a container may hold a
        // million items.
        let depth = try depth(otherwise: .infinity)
        guard depth != .infinity else {
            throw DAVError(
                .forbidden, .badRequest, "PROPFIND with Depth: infinity is not served; list one folder at a time (Depth: 1)",
                condition: "propfind-finite-depth")
        }
        let asked = try await propertyRequest()
        var xml = DAVXMLWriter()
        xml.open("multistatus", attributes: DAVXMLWriter.multistatusOpening)
        guard container != nil else {
            try await writeContainers(depth: depth, asked: asked, into: &xml)
            xml.close("multistatus")
            return Self.multistatus(xml)
        }
        let node = try await requireNode()
        var listed: [(node: DAVTree.Node, path: [String])] = [(node, path)]
        if depth == .one, node.isCollection {
            listed += try await tree.children(of: node.itemID).map { (.item($0), path + [$0.name]) }
        }
        // Read once for the whole answer: the zone's locks, every listed item's dead properties, and the
        // quota when it is asked for (Windows asks it of every folder it lists).
        let allLocks = try await locks.all()
        let dead = try await properties.read(listed.map(\.node.itemID))
        var quota: [DAVPropertyName: String] = [:]
        if case .some(let names) = asked,
            names.contains(.dav("quota-used-bytes")) || names.contains(.dav("quota-available-bytes"))
        {
            let used = try await usedBytes()
            quota[.dav("quota-used-bytes")] = String(used)
            quota[.dav("quota-available-bytes")] = String(max(0, Int(server.configuration.userQuotaBytes) - used))
        }
        for (node, path) in listed {
            var live = liveProperties(node, path: path, locks: allLocks)
            if node.isCollection { live.merge(quota) { _, quota in quota } }
            Self.writeResponse(
                href: href(path, collection: node.isCollection), live: live, dead: dead[node.itemID] ?? [:], asked: asked,
                into: &xml)
        }
        xml.close("multistatus")
        return Self.multistatus(xml)
    }

    /// What a PROPFIND's body asks for (no body: all properties).
    func propertyRequest() async throws -> PropertyRequest {
        guard let body = try await xmlBody() else { return .all }
        guard body.namespace == DAVPropertyName.dav, body.name == "propfind" else {
            throw DAVError.badRequest("a PROPFIND body is a DAV:propfind element")
        }
        if body.child("propname") != nil { return .names }
        if let prop = body.child("prop") { return .some(prop.children.map(\.key)) }
        return .all
    }

    static func multistatus(_ xml: DAVXMLWriter) -> Response {
        Response(
            status: DAVError.multiStatus, headers: [.contentType: "application/xml; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: xml.text)))
    }

    /// `/dav/` itself, and at depth 1 each container the user keeps documents in.
    private func writeContainers(depth: DAVDepth, asked: PropertyRequest, into xml: inout DAVXMLWriter) async throws {
        let collection: [DAVPropertyName: String] = [.dav("resourcetype"): "<D:collection/>"]
        Self.writeResponse(
            href: Self.href(container: nil, [], collection: true), live: collection, dead: [:], asked: asked, into: &xml)
        guard depth == .one else { return }
        for folder in try await DAVContainerFolder.all(of: session.accountID, in: server.store) {
            var live = collection
            live[.dav("displayname")] = DAVXMLWriter.escape(folder.name)
            Self.writeResponse(
                href: Self.href(container: folder.name, [], collection: true), live: live, dead: [:], asked: asked, into: &xml)
        }
    }

    /// One `response` element: the properties asked for that exist under 200, the others under 404.
    static func writeResponse(
        href: String, live: [DAVPropertyName: String], dead: [DAVPropertyName: String], asked: PropertyRequest,
        into xml: inout DAVXMLWriter
    ) {
        xml.open("response")
        xml.element("href", href)
        var found: [(DAVPropertyName, String?)] = []
        var missing: [DAVPropertyName] = []
        switch asked {
        case .all:
            // RFC 4918 leaves lockdiscovery and supportedlock in allprop; RFC 4331's quota properties are not.
            found =
                live.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
                + dead.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        case .names:
            found = (Array(live.keys) + Array(dead.keys)).sorted().map { ($0, nil) }
        case .some(let names):
            for name in names {
                if let value = live[name] {
                    found.append((name, value))
                } else if let value = dead[name] {
                    found.append((name, value))
                } else {
                    missing.append(name)
                }
            }
        }
        let deadNames = Set(dead.keys)
        if !found.isEmpty || missing.isEmpty {
            xml.open("propstat")
            xml.open("prop")
            for (name, value) in found {
                switch value {
                case nil: xml.empty(name)
                case let value? where deadNames.contains(name) && live[name] == nil: xml.raw(value)
                case let value?: xml.raw("<D:\(name.name)>\(value)</D:\(name.name)>")
                }
            }
            xml.close("prop")
            xml.element("status", "HTTP/1.1 200 OK")
            xml.close("propstat")
        }
        if !missing.isEmpty {
            xml.open("propstat")
            xml.open("prop")
            for name in missing { xml.empty(name) }
            xml.close("prop")
            xml.element("status", "HTTP/1.1 404 Not Found")
            xml.close("propstat")
        }
        xml.close("response")
    }

    /// The live properties of a node, as XML inside their elements (all of RFC 4918's `DAV:` namespace).
    func liveProperties(_ node: DAVTree.Node, path: [String], locks: [DAVLock]) -> [DAVPropertyName: String] {
        var live = commonProperties(path: path, collection: node.isCollection, locks: locks)
        guard let item = node.item else { return live }
        let created = item.createdAt ?? item.current?.savedAt ?? 0
        live[.dav("creationdate")] = DAVDates.iso8601(milliseconds: created)
        if let version = item.current, !node.isCollection {
            live.merge(Self.contentProperties(version.content, name: item.name)) { _, content in content }
        } else {
            live[.dav("getlastmodified")] = DAVDates.http(milliseconds: created)
        }
        return live
    }

    /// What every resource has: its type, its locks and its name.
    func commonProperties(path: [String], collection: Bool, locks: [DAVLock]) -> [DAVPropertyName: String] {
        [
            .dav("resourcetype"): collection ? "<D:collection/>" : "",
            .dav("supportedlock"): Self.supportedLock,
            .dav("lockdiscovery"): Self.lockDiscovery(locks.filter { $0.covers(DAVLock.key(path)) }, href: self),
            .dav("displayname"): DAVXMLWriter.escape(path.last ?? container ?? ""),
        ]
    }

    /// What a file's bytes give it: length, entity tag, modification time and media type.
    static func contentProperties(_ content: DocumentContent, name: String) -> [DAVPropertyName: String] {
        [
            .dav("getcontentlength"): String(content.size),
            .dav("getetag"): DAVXMLWriter.escape(etag(content)),
            .dav("getlastmodified"): DAVDates.http(milliseconds: content.modifiedAt),
            .dav("getcontenttype"): DAVXMLWriter.escape(DAVContentTypes.type(of: name)),
        ]
    }

    /// A version's entity tag: the first 128 bits of its content's SHA-256, quoted. Short enough for the
    /// `If` headers clients build from two tags and a lock token in a fixed buffer (litmus's is 200 bytes).
    static func etag(_ version: DocumentVersion) -> String { etag(version.content) }
    static func etag(_ content: DocumentContent) -> String { "\"\(content.contentHash.prefix(32))\"" }

    static let supportedLock =
        "<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>"
        + "<D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>"

    static func lockDiscovery(_ locks: [DAVLock], href handler: DAVHandler) -> String {
        locks.map { lock in
            var xml = "<D:activelock><D:locktype><D:write/></D:locktype>"
            xml += "<D:lockscope>\(lock.exclusive ? "<D:exclusive/>" : "<D:shared/>")</D:lockscope>"
            xml += "<D:depth>\(lock.depthInfinity ? "infinity" : "0")</D:depth>"
            if let owner = lock.owner { xml += owner }
            xml += "<D:timeout>Second-\(lock.timeoutSeconds)</D:timeout>"
            xml += "<D:locktoken><D:href>\(DAVXMLWriter.escape(lock.token))</D:href></D:locktoken>"
            xml += "<D:lockroot><D:href>\(DAVXMLWriter.escape(handler.href(lock.path, collection: false)))</D:href></D:lockroot>"
            return xml + "</D:activelock>"
        }.joined()
    }

    /// Bytes the user holds in all their documents, records and key-value stores: what the quota counts.
    func usedBytes() async throws -> Int {
        do {
            return try await server.store.transact(zone, creating: false, reading: []) { try $0.ownerBytes() }.result
        } catch StoreError.missing {
            return 0
        }
    }

    func get(withBody: Bool) async throws -> Response {
        let node = try await requireNode()
        guard let item = node.item, item.kind != .folder else {
            return try await collectionPage(node, withBody: withBody)
        }
        guard let version = item.current else { throw DAVError.notFound("\(item.name) has no content") }
        return try await contentResponse(version.content, name: item.name, withBody: withBody)
    }

    /// A file's bytes as GET and HEAD answer them: validators, conditions and one range.
    func contentResponse(_ content: DocumentContent, name: String, withBody: Bool) async throws -> Response {
        let etag = Self.etag(content)
        var headers = Self.sandboxed
        headers[.eTag] = etag
        headers[.lastModified] = DAVDates.http(milliseconds: content.modifiedAt)
        headers[.contentType] = DAVContentTypes.type(of: name)
        headers[.acceptRanges] = "bytes"
        if let noneMatch = request.headers[.ifNoneMatch], Self.matches(noneMatch, etag: etag) {
            return Response(status: .notModified, headers: headers)
        }
        if let match = request.headers[.ifMatch], !Self.matches(match, etag: etag) {
            throw DAVError.preconditionFailed("\(name) is no longer the version \(match.prefix(80))")
        }
        let size = content.size
        var range: ClosedRange<Int64>?
        // A range applies only while the content is the one If-Range names.
        let rangeApplies = request.headers[HTTPField.Name("If-Range")!].map { $0 == etag } ?? true
        if let header = request.headers[.range], rangeApplies, let asked = ByteRange(header: header) {
            guard let bounds = asked.bounds(size: Int(size)) else {
                var error = DAVError(
                    .rangeNotSatisfiable, .rangeNotSatisfiable, "\(name) holds \(size) bytes; the range lies beyond them")
                error.headers[.contentRange] = "bytes */\(size)"
                throw error
            }
            range = Int64(bounds.lowerBound)...Int64(bounds.upperBound)
            headers[.contentRange] = "bytes \(bounds.lowerBound)-\(bounds.upperBound)/\(size)"
        }
        let length = range.map { Int64($0.count) } ?? size
        let status: HTTPResponse.Status = range == nil ? .ok : .partialContent
        guard withBody else {
            headers[.contentLength] = String(length)
            return Response(status: status, headers: headers)
        }
        let blobs = server.blobs
        let chunks = content.chunks
        let wanted = range ?? 0...max(0, size - 1)
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: Int(length)) { writer in
                var offset: Int64 = 0
                for chunk in chunks {
                    defer { offset += chunk.size }
                    let chunkRange = offset...(offset + chunk.size - 1)
                    guard chunkRange.overlaps(wanted) else { continue }
                    let from = max(wanted.lowerBound, chunkRange.lowerBound) - offset
                    let to = min(wanted.upperBound, chunkRange.upperBound) - offset
                    try await blobs.read(chunk.hash, range: from...to) { piece in try await writer.write(piece) }
                }
                try await writer.finish(nil)
            })
    }

    /// A folder asked for with GET: a plain page listing what it holds, for a browser pointed at it.
    private func collectionPage(_ node: DAVTree.Node, withBody: Bool) async throws -> Response {
        var html = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>"
        html += DAVXMLWriter.escape(path.last ?? container ?? "Nimbus") + "</title></head><body><ul>"
        if container == nil {
            for folder in try await DAVContainerFolder.all(of: session.accountID, in: server.store) {
                let link = Self.href(container: folder.name, [], collection: true)
                html += "<li><a href=\"\(DAVXMLWriter.escape(link))\">\(DAVXMLWriter.escape(folder.name))/</a></li>"
            }
        } else {
            for child in try await tree.children(of: node.itemID) {
                let collection = child.kind == .folder
                let link = href(path + [child.name], collection: collection)
                html +=
                    "<li><a href=\"\(DAVXMLWriter.escape(link))\">\(DAVXMLWriter.escape(child.name))\(collection ? "/" : "")</a></li>"
            }
        }
        html += "</ul></body></html>"
        var headers = Self.sandboxed
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.contentLength] = String(html.utf8.count)
        return Response(
            status: .ok, headers: headers, body: withBody ? ResponseBody(byteBuffer: ByteBuffer(string: html)) : ResponseBody())
    }

    /// Headers of every body a GET serves: a user's file (an HTML page among them) is shown as content, in an
    /// origin of its own with no script, never as a page of this server's origin, where the dashboard's
    /// session lives.
    static let sandboxed: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
    ]

    /// Whether an `If-Match` or `If-None-Match` header's list names `etag` (or is `*`).
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }
}

/// The dates WebDAV properties and HTTP headers carry, written without a shared formatter (a PROPFIND writes
/// one per item, on any thread).
enum DAVDates {
    /// RFC 9110's IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func http(milliseconds: Int64) -> String {
        var seconds = time_t(max(0, milliseconds / 1000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let two = { (value: Int32) in value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(1900 + parts.tm_year) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    static func iso8601(milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(Date.ISO8601FormatStyle())
    }

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}

/// A file's media type by its extension, for `getcontenttype` and `Content-Type`.
enum DAVContentTypes {
    static func type(of name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "application/octet-stream" }
        return types[name[name.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }

    private static let types: [String: String] = [
        "txt": "text/plain; charset=utf-8", "md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8",
        "htm": "text/html; charset=utf-8", "css": "text/css", "csv": "text/csv", "json": "application/json",
        "xml": "application/xml", "pdf": "application/pdf", "zip": "application/zip", "png": "image/png",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "heic": "image/heic", "svg": "image/svg+xml",
        "webp": "image/webp", "mp3": "audio/mpeg", "m4a": "audio/mp4", "mp4": "video/mp4", "mov": "video/quicktime",
        "doc": "application/msword", "xls": "application/vnd.ms-excel",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ]
}
