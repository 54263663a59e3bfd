import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NimbusCore
import NimbusStore

/// PUT, MKCOL, DELETE, COPY and MOVE: each a document commit through the document service.
extension DAVHandler {
    func put() async throws -> Response {
        guard container != nil, let name = path.last else {
            throw DAVError.methodNotAllowed("PUT stores a file inside a container: /dav/{container}/{name}")
        }
        try DocumentNames.validate(name)
        let parent = try await tree.parent(of: path)
        let existing = try await tree.child(named: name, in: parent.itemID)
        if let existing, existing.kind != .file {
            throw DAVError.methodNotAllowed("\(existing.name) is a \(existing.kind.rawValue); PUT replaces files only")
        }
        let current = existing?.current.map(Self.etag)
        if let noneMatch = request.headers[.ifNoneMatch], let current, Self.matches(noneMatch, etag: current) {
            throw DAVError.preconditionFailed("\(name) exists already (If-None-Match)")
        }
        var base = existing?.current?.content.contentHash
        if let match = request.headers[.ifMatch] {
            guard let current else { throw DAVError.preconditionFailed("nothing at \(name) to match (If-Match)") }
            if !Self.matches(match, etag: current), let existing {
                // The client edited a version that is no longer current (a device saved meanwhile): what it
                // sends is kept beside the current version as a conflict version, as two devices' edits are.
                let history = try await documents.versions(zone, DocumentVersionsRequest(itemID: existing.itemID))
                let known = history.item.conflicts + history.history
                guard let edited = known.first(where: { Self.matches(match, etag: Self.etag($0)) }) else {
                    throw DAVError.preconditionFailed("\(name) never had the version \(match.prefix(80)) (If-Match)")
                }
                base = edited.content.contentHash
            }
        }
        let writeGuard = try await writeGuard(.init(path: path, membership: existing == nil))
        var modifiedAt = server.configuration.now().milliseconds
        var headers = HTTPFields()
        if let stated = request.headers[HTTPField.Name("X-OC-Mtime")!], let seconds = Int64(stated),
            (0...Self.latestModificationSeconds).contains(seconds)
        {
            // rclone and the ownCloud/Nextcloud clients keep a file's modification time this way.
            modifiedAt = seconds * 1000
            headers[HTTPField.Name("X-OC-Mtime")!] = "accepted"
        }
        let (content, unheld) = try await DAVUpload(server: server, zone: zone).store(request.body, modifiedAt: modifiedAt)
        let operation = DocumentOperation(
            .save, itemID: existing?.itemID ?? Self.newItemID(), parentID: parent.itemID, name: existing?.name ?? name,
            kind: .file, baseContentHash: base, content: content)
        try await apply([operation], holding: unheld, guarding: writeGuard)
        headers[.eTag] = Self.etag(content)
        headers[.contentLength] = "0"
        return Response(status: existing == nil ? .created : .noContent, headers: headers)
    }

    func mkcol() async throws -> Response {
        guard container != nil, let name = path.last else {
            throw DAVError.methodNotAllowed("this collection exists already")
        }
        let body = try await request.body.collect(
            upTo: Self.maxXMLBytes, orThrow: DAVError(.unsupportedMediaType, .badRequest, "MKCOL takes no body"))
        guard body.readableBytes == 0 else { throw DAVError(.unsupportedMediaType, .badRequest, "MKCOL takes no body") }
        try DocumentNames.validate(name)
        let parent = try await tree.parent(of: path)
        if try await tree.child(named: name, in: parent.itemID) != nil {
            throw DAVError.methodNotAllowed("\(name) exists already")
        }
        try await apply(
            [DocumentOperation(.save, itemID: Self.newItemID(), parentID: parent.itemID, name: name, kind: .folder)],
            guarding: try await writeGuard(.init(path: path, membership: true)))
        return Response(status: .created, headers: [.contentLength: "0"])
    }

    func delete() async throws -> Response {
        guard container != nil, !path.isEmpty else {
            throw DAVError.methodNotAllowed("a container's root is not deleted over WebDAV")
        }
        guard case .item(let item) = try await requireNode() else { throw DAVError.notFound("nothing to delete") }
        let writeGuard = try await writeGuard(.init(path: path, membership: true, subtree: true))
        let removal = try await removal(of: item)
        try await apply(removal.operations, guarding: writeGuard)
        try await forget(removal.doomed, at: path)
        return Response(status: .noContent)
    }

    /// The operations moving an item and everything in it to Recently Deleted (deepest first, as the document
    /// service deletes folders once empty), and the items they delete.
    private func removal(of item: DocumentItem) async throws -> (operations: [DocumentOperation], doomed: [String]) {
        var doomed: [DocumentItem] = [item]
        if item.kind == .folder { doomed += try await tree.descendants(of: item.itemID).map(\.item) }
        let operations = doomed.reversed().map {
            DocumentOperation(.delete, itemID: $0.itemID, baseContentHash: $0.current?.content.contentHash)
        }
        return (operations, doomed.map(\.itemID))
    }

    /// What WebDAV kept of deleted items beside them: their dead properties and the locks on their paths.
    private func forget(_ doomed: [String], at path: [String]) async throws {
        try await properties.forget(doomed)
        try await locks.releaseAll(within: path)
    }

    func copyOrMove(moving: Bool) async throws -> Response {
        guard container != nil, !path.isEmpty else {
            throw DAVError(.forbidden, .accessDenied, "a container's root is not copied or moved")
        }
        let destination = try destinationPath()
        guard case .item(let source) = try await requireNode() else { throw DAVError.notFound("nothing to copy") }
        guard destination != path else {
            throw DAVError(.forbidden, .badRequest, "the destination is the source itself")
        }
        let (sourceKey, destinationKey) = (DAVLock.key(path), DAVLock.key(destination))
        if source.kind == .folder, destinationKey.hasPrefix(sourceKey + "/") {
            throw DAVError(.forbidden, .badRequest, "a folder cannot go inside itself")
        }
        let depth = try depth(otherwise: .infinity)
        guard depth != .one, !moving || depth == .infinity else {
            throw DAVError.badRequest("\(moving ? "MOVE takes Depth: infinity" : "COPY takes Depth: 0 or infinity")")
        }
        let parent = try await tree.parent(of: destination)
        guard let name = destination.last else { throw DAVError(.forbidden, .accessDenied, "a container's root is not replaced") }
        try DocumentNames.validate(name)
        // A rename that changes only case or normalisation finds the source at its destination: that is no
        // overwrite.
        let existing = try await tree.child(named: name, in: parent.itemID).flatMap { $0.itemID == source.itemID ? nil : $0 }
        let overwrite = request.headers[HTTPField.Name("Overwrite")!]?.uppercased() != "F"
        if existing != nil, !overwrite {
            throw DAVError.preconditionFailed("\(name) exists and Overwrite is F")
        }
        let target = DAVWriteGuard.Target(path: destination, membership: existing == nil, subtree: true)
        let writeGuard =
            moving
            ? try await self.writeGuard(.init(path: path, membership: true, subtree: true), target)
            : try await self.writeGuard(target)
        // What the destination held goes in the same commit as what replaces it: a copy refused (a full
        // account) leaves the destination as it was.
        var removal: (operations: [DocumentOperation], doomed: [String]) = ([], [])
        if let existing { removal = try await self.removal(of: existing) }
        if moving {
            try await apply(
                removal.operations + [DocumentOperation(.move, itemID: source.itemID, parentID: parent.itemID, name: name)],
                guarding: writeGuard)
            try await locks.releaseAll(within: path)
        } else {
            let (operations, copies) = try await copies(of: source, into: parent.itemID, name: name, deep: depth == .infinity)
            try await apply(removal.operations + operations, guarding: writeGuard)
            try await properties.copy(copies)
        }
        if existing != nil { try await forget(removal.doomed, at: destination) }
        return Response(status: existing == nil ? .created : .noContent, headers: [.contentLength: "0"])
    }

    /// The saves of new items holding what `source` (and, when `deep`, everything in it) holds now, and which
    /// item each copies; the chunks are the user's already, so nothing is uploaded again.
    private func copies(of source: DocumentItem, into parent: String?, name: String, deep: Bool) async throws
        -> (operations: [DocumentOperation], copies: [(from: String?, to: String)])
    {
        let copyID = Self.newItemID()
        var copies: [String: String] = [source.itemID: copyID]
        var operations = [
            DocumentOperation(
                .save, itemID: copyID, parentID: parent, name: name, kind: source.kind, content: source.current?.content)
        ]
        if deep, source.kind == .folder {
            for (item, _) in try await tree.descendants(of: source.itemID) {
                let id = Self.newItemID()
                copies[item.itemID] = id
                operations.append(
                    DocumentOperation(
                        .save, itemID: id, parentID: item.parentID.flatMap { copies[$0] }, name: item.name,
                        kind: item.kind, content: item.current?.content))
            }
        }
        return (operations, copies.map { (from: $0.key, to: $0.value) })
    }

    /// The path the `Destination` header names in this container (a URL or an absolute path).
    func destinationPath() throws -> [String] {
        guard let text = request.headers[HTTPField.Name("Destination")!] else {
            throw DAVError.badRequest("COPY and MOVE name their Destination")
        }
        guard let names = try pathInContainer(text) else {
            throw DAVError(
                HTTPResponse.Status(code: 502, reasonPhrase: "Bad Gateway"), .badRequest,
                "the destination is not in this container; copy between containers by downloading and uploading")
        }
        return names
    }

    /// The names below this container that a URL or absolute path (`Destination`, an `If` header's resource
    /// tag) points at; nil when it points into another container.
    func pathInContainer(_ reference: String) throws -> [String]? {
        var text = reference
        if let scheme = text.range(of: "://") {
            text = String(text[(text[scheme.upperBound...].firstIndex(of: "/") ?? text.endIndex)...])
        }
        if let query = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = String(text[..<query]) }
        guard text.hasPrefix(Self.prefix + "/") else {
            throw DAVError.badRequest("\(reference.prefix(80)) is not an absolute URL or path under \(Self.prefix)/")
        }
        let (named, names) = try Self.parse(text)
        return named == container ? names : nil
    }

    /// The latest modification time a client may state (`X-OC-Mtime`): the last second of year 9999.
    static let latestModificationSeconds: Int64 = 253_402_300_799

    /// A new item's ID (96 random bits), as devices mint theirs for the items they create.
    static func newItemID() -> String { Secrets.hex(Secrets.randomBytes(12)) }
}
