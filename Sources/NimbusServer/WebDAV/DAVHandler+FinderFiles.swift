import Foundation
import HTTPTypes
import Hummingbird
import NimbusCore
import NimbusStore

/// Finder's own files: the AppleDouble `._name` it writes beside every file it copies to a server (the
/// original's extended attributes and resource fork) and `.DS_Store` (a folder's window layout). As
/// documents they would reach every device and every other system as clutter, so by default they are kept
/// out of sync: stored for WebDAV beside the container's documents (`dav/f/…`), readable, lockable and
/// deletable at their paths as Finder expects, never an item, never in a folder's listing. An app password
/// made to keep them (`--keep-finder-files`) stores them as documents like any file.
extension DAVHandler {
    static func isFinderFile(_ name: String) -> Bool { name.hasPrefix("._") || name == ".DS_Store" }

    /// Whether this request's Finder files are kept out of sync (the app password's choice).
    var keepsFinderFilesOutOfSync: Bool {
        !session.deviceID.hasPrefix(AuthService.finderFilesDevicePrefix)
    }

    /// One Finder file kept out of sync.
    struct FinderFile: Codable, Sendable {
        var name: String
        /// Named `content`, as in a document's payload, so the blob collector keeps its chunks while it lives.
        var content: DocumentContent
    }

    func respondToFinderFile(_ name: String) async throws -> Response {
        let parent = try await tree.parent(of: path)
        let key = DocumentKeys.finderFile(parent: parent.itemID, name: name)
        switch request.method.rawValue {
        case "PUT":
            let writeGuard = try await writeGuard(.init(path: path))
            let existed = try await finderFile(key) != nil
            let (content, _) = try await DAVUpload(server: server, zone: zone).store(
                request.body, modifiedAt: server.configuration.now().milliseconds)
            try await storeFinderFile(FinderFile(name: name, content: content), key: key, guarding: writeGuard)
            return Response(
                status: existed ? .noContent : .created, headers: [.eTag: Self.etag(content), .contentLength: "0"])
        case "GET", "HEAD":
            guard let file = try await finderFile(key) else { throw DAVError.notFound("no \(name) here") }
            return try await contentResponse(file.content, name: name, withBody: request.method == .get)
        case "DELETE":
            guard try await finderFile(key) != nil else { throw DAVError.notFound("no \(name) here") }
            let writeGuard = try await writeGuard(.init(path: path))
            try await server.store.transact(zone, creating: false) { transaction in
                try writeGuard.check(in: transaction)
                try transaction.put(key, payload: nil, size: 0)
            }
            try await properties.forget([Self.finderPropertiesKey(key)])
            try await locks.releaseAll(within: path)
            return Response(status: .noContent)
        case "PROPFIND":
            guard let file = try await finderFile(key) else { throw DAVError.notFound("no \(name) here") }
            let asked = try await propertyRequest()
            let live = commonProperties(path: path, collection: false, locks: try await locks.all())
                .merging(Self.contentProperties(file.content, name: name)) { _, content in content }
            var xml = DAVXMLWriter()
            xml.open("multistatus", attributes: DAVXMLWriter.multistatusOpening)
            Self.writeResponse(
                href: href(path, collection: false), live: live,
                dead: try await properties.read(Self.finderPropertiesKey(key)), asked: asked, into: &xml)
            xml.close("multistatus")
            return Self.multistatus(xml)
        case "PROPPATCH":
            guard try await finderFile(key) != nil else { throw DAVError.notFound("no \(name) here") }
            return try await proppatch(propertiesOf: Self.finderPropertiesKey(key), collection: false)
        case "LOCK":
            return try await lock(mapped: try await finderFile(key) != nil) { writeGuard in
                let empty = DAVUpload.emptyContent(modifiedAt: server.configuration.now().milliseconds)
                try await storeFinderFile(FinderFile(name: name, content: empty), key: key, guarding: writeGuard)
            }
        case "UNLOCK": return try await unlock()
        case "COPY", "MOVE":
            guard let file = try await finderFile(key) else { throw DAVError.notFound("no \(name) here") }
            let destination = try destinationPath()
            guard let target = destination.last, Self.isFinderFile(target) else {
                throw DAVError(.forbidden, .accessDenied, "Finder's own files stay out of sync; they are not made documents")
            }
            let targetKey = DocumentKeys.finderFile(parent: try await tree.parent(of: destination).itemID, name: target)
            let existed = try await finderFile(targetKey) != nil
            if existed, request.headers[HTTPField.Name("Overwrite")!]?.uppercased() == "F" {
                throw DAVError.preconditionFailed("\(target) exists and Overwrite is F")
            }
            let moving = request.method.rawValue == "MOVE"
            let writeGuard =
                moving
                ? try await self.writeGuard(.init(path: destination), .init(path: path))
                : try await self.writeGuard(.init(path: destination))
            try await storeFinderFile(
                FinderFile(name: target, content: file.content), key: targetKey, replacing: moving ? key : nil,
                guarding: writeGuard)
            try await properties.copy([(from: Self.finderPropertiesKey(key), to: Self.finderPropertiesKey(targetKey))])
            if moving {
                try await properties.forget([Self.finderPropertiesKey(key)])
                try await locks.releaseAll(within: path)
            }
            return Response(status: existed ? .noContent : .created, headers: [.contentLength: "0"])
        default:
            throw DAVError.methodNotAllowed("\(name) is one of Finder's own files: \(request.method) does not apply to it")
        }
    }

    private func finderFile(_ key: String) async throws -> FinderFile? {
        guard let payload = try await server.store.entries(zone, keys: [key]).first?.payload else { return nil }
        return try JSONDecoder().decode(FinderFile.self, from: payload)
    }

    /// Writes the file and holds its chunks as named ones, so its bytes count once (through the file); a move
    /// removes its old entry (`replacing`) in the same commit, which the guard's locks may refuse.
    private func storeFinderFile(
        _ file: FinderFile, key: String, replacing old: String? = nil, guarding writeGuard: DAVWriteGuard
    ) async throws {
        let payload = try JSONEncoder().encode(file)
        let (quota, now) = (Int(server.configuration.userQuotaBytes), server.configuration.now().milliseconds)
        try await server.store.transact(zone, creating: true) { transaction in
            try writeGuard.check(in: transaction)
            let before = try transaction.ownerBytes()
            if let old { try transaction.put(old, payload: nil, size: 0) }
            try transaction.put(key, payload: payload, size: Int(file.content.size))
            for chunk in file.content.chunks {
                var held =
                    try ChunkHolding.read(chunk.hash, in: transaction)
                    ?? ChunkHolding(size: chunk.size, uploadedAt: now, named: true)
                held.named = true
                try held.write(chunk.hash, in: transaction)
            }
            let used = try transaction.ownerBytes()
            guard used <= quota || used <= before else {
                throw DAVError(DAVError.insufficientStorage, .quotaExceeded, "the owner's storage is full")
            }
        }
    }

    /// The key a Finder file's dead properties are kept under (`DAVProperties` takes an item's ID there).
    private static func finderPropertiesKey(_ key: String) -> String { "f:" + key }
}
