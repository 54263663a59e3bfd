import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NimbusCore
import NimbusStore

/// LOCK and UNLOCK, and the check every write makes: the `If` header holds, and the request submits a
/// token of every lock on what it changes.
extension DAVHandler {
    func lock() async throws -> Response {
        guard container != nil, !path.isEmpty else {
            throw DAVError.methodNotAllowed("a container's root is not locked; lock what is inside it")
        }
        return try await lock(mapped: try await tree.node(at: path) != nil) { writeGuard in
            let name = path[path.count - 1]
            try DocumentNames.validate(name)
            let parent = try await tree.parent(of: path)
            let empty = DAVUpload.emptyContent(modifiedAt: server.configuration.now().milliseconds)
            try await apply(
                [
                    DocumentOperation(
                        .save, itemID: Self.newItemID(), parentID: parent.itemID, name: name, kind: .file, content: empty)
                ], guarding: writeGuard)
        }
    }

    /// Takes or refreshes a lock on the request's path; `makeEmpty` puts an empty file at a path that holds
    /// nothing (`mapped` false), in a commit that honours the guard, before a new lock is granted there.
    func lock(mapped: Bool, makeEmpty: (DAVWriteGuard) async throws -> Void) async throws -> Response {
        let timeout = timeoutSeconds()
        guard let body = try await xmlBody() else { return try await refreshLock(timeout: timeout) }
        guard body.namespace == DAVPropertyName.dav, body.name == "lockinfo", let scope = body.child("lockscope"),
            body.child("locktype")?.child("write") != nil
        else {
            throw DAVError.badRequest("a LOCK body is a DAV:lockinfo with a lockscope and a write locktype")
        }
        let exclusive = scope.child("exclusive") != nil
        guard exclusive || scope.child("shared") != nil else {
            throw DAVError.badRequest("a lock's scope is exclusive or shared")
        }
        let depth = try depth(otherwise: .infinity)
        guard depth != .one else { throw DAVError.badRequest("a lock's Depth is 0 or infinity") }
        var status = HTTPResponse.Status.ok
        if !mapped {
            // Locking a name that holds nothing makes an empty file there (RFC 4918 §7.3), so the client can
            // write it without another client taking the name.
            try await makeEmpty(try await writeGuard(.init(path: path, membership: true)))
            status = .created
        } else if let header = try ifHeader() {
            try await evaluate(header, locks: try await locks.all())
        }
        let lock = DAVLock(
            token: "urn:uuid:\(UUID().uuidString.lowercased())", path: path, depthInfinity: depth == .infinity,
            exclusive: exclusive, owner: body.child("owner")?.serialized(), timeoutSeconds: timeout,
            expiresAt: server.configuration.now().milliseconds + Int64(timeout) * 1000)
        try await locks.grant(lock)
        return Self.lockAnswer(lock, status: status, handler: self)
    }

    private func refreshLock(timeout: Int) async throws -> Response {
        guard let header = try ifHeader(), let token = header.submittedTokens.first else {
            throw DAVError.badRequest("a LOCK without a body refreshes a lock: name its token in an If header")
        }
        let held = try await locks.all().filter { $0.covers(DAVLock.key(path)) }
        guard held.contains(where: { $0.token == token }) else {
            throw DAVError.preconditionFailed("no lock \(token.prefix(80)) holds this resource")
        }
        guard let lock = try await locks.refresh(token: token, timeoutSeconds: timeout) else {
            throw DAVError.preconditionFailed("the lock \(token.prefix(80)) expired")
        }
        return Self.lockAnswer(lock, status: .ok, handler: self)
    }

    private static func lockAnswer(_ lock: DAVLock, status: HTTPResponse.Status, handler: DAVHandler) -> Response {
        var xml = DAVXMLWriter()
        xml.open("prop", attributes: DAVXMLWriter.multistatusOpening)
        xml.raw("<D:lockdiscovery>\(lockDiscovery([lock], href: handler))</D:lockdiscovery>")
        xml.close("prop")
        return Response(
            status: status,
            headers: [.contentType: "application/xml; charset=utf-8", HTTPField.Name("Lock-Token")!: "<\(lock.token)>"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: xml.text)))
    }

    func unlock() async throws -> Response {
        guard let header = request.headers[HTTPField.Name("Lock-Token")!] else {
            throw DAVError.badRequest("UNLOCK names its lock in a Lock-Token header")
        }
        let token = header.trimmingCharacters(in: CharacterSet(charactersIn: " <>"))
        let key = DAVLock.key(path)
        guard try await locks.all().contains(where: { $0.token == token && $0.covers(key) }),
            try await locks.release(token: token)
        else {
            throw DAVError(
                .conflict, .conflict, "no lock \(token.prefix(80)) holds this resource",
                condition: "lock-token-matches-request-uri")
        }
        return Response(status: .noContent)
    }

    /// The `Timeout` header's first choice a server may grant (`Second-N` or `Infinite`), within bounds.
    private func timeoutSeconds() -> Int {
        guard let header = request.headers[HTTPField.Name("Timeout")!] else { return DAVLocks.defaultTimeout }
        for choice in header.split(separator: ",") {
            let choice = choice.trimmingCharacters(in: .whitespaces)
            if choice.lowercased() == "infinite" { return DAVLocks.timeouts.upperBound }
            if choice.lowercased().hasPrefix("second-"), let seconds = Int(choice.dropFirst(7)) {
                return min(max(seconds, DAVLocks.timeouts.lowerBound), DAVLocks.timeouts.upperBound)
            }
        }
        return DAVLocks.defaultTimeout
    }

    func ifHeader() throws -> DAVIfHeader? {
        guard let text = request.headers[HTTPField.Name("If")!] else { return nil }
        guard let header = DAVIfHeader(text) else { throw DAVError.badRequest("the If header is malformed") }
        return header
    }

    /// Refuses a change unless the `If` header holds, and returns what the change's commit must find: the
    /// request submits a token of each lock on what it changes (`DAVWriteGuard`: on each target itself, on its
    /// folder when the folder's members change, on anything below it when the change reaches there).
    func writeGuard(_ targets: DAVWriteGuard.Target...) async throws -> DAVWriteGuard {
        let header = try ifHeader()
        if let header { try await evaluate(header, locks: try await locks.all()) }
        return DAVWriteGuard(targets: targets, submitted: header?.submittedTokens ?? [], now: locks.now)
    }

    /// Throws 412 unless one of the header's lists holds (RFC 4918 §10.4): every condition of it true of its
    /// resource (a lock token: a lock with that token holds the resource; an entity tag: its current one).
    func evaluate(_ header: DAVIfHeader, locks: [DAVLock]) async throws {
        for list in header.lists {
            guard let resource = try? resourcePath(list.resource) else { continue }
            let key = DAVLock.key(resource)
            var current: String?
            var etagRead = false
            var holds = true
            for condition in list.conditions {
                var truth = false
                if let token = condition.token {
                    truth = locks.contains { $0.token == token && $0.covers(key) }
                } else if let wanted = condition.etag {
                    if !etagRead {
                        current = try await currentETag(resource)
                        etagRead = true
                    }
                    truth = current == "\"\(wanted.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))\""
                }
                if condition.negated { truth.toggle() }
                if !truth {
                    holds = false
                    break
                }
            }
            if holds { return }
        }
        throw DAVError.preconditionFailed("no list of the If header holds")
    }

    /// The path an `If` header's resource tag names (nil: the request's own).
    private func resourcePath(_ tag: String?) throws -> [String] {
        guard let tag else { return path }
        guard let names = try pathInContainer(tag) else { throw DAVError.badRequest("another container") }
        return names
    }

    private func currentETag(_ path: [String]) async throws -> String? {
        try await tree.node(at: path)?.item?.current.map(Self.etag)
    }
}
