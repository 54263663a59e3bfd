import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NimbusCore
import NimbusStore

/// One WebDAV request of a signed-in user: where its URL points, and the method's work there. The methods
/// live in extensions by concern (reads, writes, properties, locks).
struct DAVHandler: Sendable {
    let server: ServerState
    let request: Request
    let session: AuthenticatedSession
    /// The container folder the URL names (its first name); nil for `/dav/` itself.
    let container: String?
    /// The names below the container.
    let path: [String]

    static let prefix = "/dav"
    /// Request bodies of XML (PROPFIND, PROPPATCH, LOCK) read at most.
    static let maxXMLBytes = 1 << 20

    static func make(server: ServerState, request: Request, session: AuthenticatedSession) async throws
        -> DAVHandler
    {
        let (container, path) = try parse(request.uri.path)
        if let container {
            let identifier = DAVContainerFolder(name: container).identifier
            guard
                try await server.containers.value(
                    for: identifier, load: { try await server.store.container(identifier: identifier) })
                    != nil
            else {
                throw DAVError.notFound("no container \(identifier)")
            }
        }
        return DAVHandler(
            server: server, request: request, session: session, container: container, path: path)
    }

    /// The container and names a `/dav/…` path (percent-encoded, as sent) points at.
    static func parse(_ rawPath: String) throws -> (container: String?, path: [String]) {
        guard rawPath == prefix || rawPath.hasPrefix(prefix + "/") else { throw DAVError.notFound("not a WebDAV path") }
        var names: [String] = []
        for component in rawPath.dropFirst(prefix.count).split(separator: "/") {
            guard let name = String(component).removingPercentEncoding, !name.isEmpty, name != ".", name != "..",
                !name.contains("/"), !name.unicodeScalars.contains(where: { $0.value == 0 })
            else {
                throw DAVError.badRequest("the path holds a name that is not allowed: \(component.prefix(80))")
            }
            names.append(name)
        }
        guard let container = names.first else { return (nil, []) }
        return (container, Array(names.dropFirst()))
    }

    /// The URL path of `names` in the request's container, percent-encoded (a collection's ends in `/`).
    func href(_ names: [String], collection: Bool) -> String {
        Self.href(container: container, names, collection: collection)
    }

    static func href(container: String?, _ names: [String], collection: Bool) -> String {
        let encoded = ([container].compactMap { $0 } + names).map {
            $0.addingPercentEncoding(withAllowedCharacters: hrefCharacters) ?? $0
        }
        let joined = ([prefix] + encoded).joined(separator: "/")
        return collection ? joined + "/" : joined
    }

    /// Unreserved characters and the sub-delimiters clients leave alone in a path segment (RFC 3986).
    private static let hrefCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$'()*+,=:@")

    var zone: ZoneKey {
        ZoneKey(
            accountID: session.accountID,
            address: ZoneAddress(
                service: DAVContainerFolder(name: container ?? "").service,
                name: DocumentService.zoneName))
    }

    var tree: DAVTree { DAVTree(store: server.store, zone: zone) }
    var locks: DAVLocks {
        let clock = server.configuration.now
        return DAVLocks(store: server.store, zone: zone, now: { clock().milliseconds })
    }
    var properties: DAVProperties {
        DAVProperties(store: server.store, zone: zone, quota: Int(server.configuration.userQuotaBytes))
    }
    var documents: DocumentService { DocumentService(server: server) }

    func respond() async throws -> Response {
        if container != nil, let name = path.last, Self.isFinderFile(name), keepsFinderFilesOutOfSync {
            return try await respondToFinderFile(name)
        }
        switch request.method.rawValue {
        case "PROPFIND": return try await propfind()
        case "GET": return try await get(withBody: true)
        case "HEAD": return try await get(withBody: false)
        case "PUT": return try await put()
        case "MKCOL": return try await mkcol()
        case "DELETE": return try await delete()
        case "COPY": return try await copyOrMove(moving: false)
        case "MOVE": return try await copyOrMove(moving: true)
        case "PROPPATCH": return try await proppatch()
        case "LOCK": return try await lock()
        case "UNLOCK": return try await unlock()
        default: throw DAVError.methodNotAllowed("\(request.method) is not a WebDAV method this server serves")
        }
    }

    static func options() -> Response {
        Response(
            status: .ok,
            headers: [
                HTTPField.Name("DAV")!: "1, 2",
                .allow: DAVRoutes.methods.joined(separator: ", "),
                HTTPField.Name("MS-Author-Via")!: "DAV",
                .contentLength: "0",
            ])
    }

    /// The container's node at the request's path; 404 when nothing is there.
    func requireNode() async throws -> DAVTree.Node {
        guard container != nil else { return .root }
        guard let node = try await tree.node(at: path) else {
            throw DAVError.notFound("nothing at \(href(path, collection: false))")
        }
        return node
    }

    /// The request's body, which must be XML if present; nil when there is none.
    func xmlBody() async throws -> DAVElement? {
        let body = try await request.body.collect(
            upTo: Self.maxXMLBytes,
            orThrow: DAVError(.contentTooLarge, .requestTooLarge, "an XML request body holds at most \(Self.maxXMLBytes) bytes"))
        guard body.readableBytes > 0 else { return nil }
        guard let element = DAVElement.parse(Data(buffer: body)) else {
            throw DAVError.badRequest("the request body is not well-formed XML")
        }
        return element
    }

    /// The `Depth` header: 0, 1 or infinity (absent: `otherwise`).
    func depth(otherwise: DAVDepth) throws -> DAVDepth {
        guard let text = request.headers[HTTPField.Name("Depth")!] else { return otherwise }
        switch text.lowercased() {
        case "0": return .zero
        case "1": return .one
        case "infinity": return .infinity
        default: throw DAVError.badRequest("Depth is 0, 1 or infinity, not \(text.prefix(40))")
        }
    }

    /// Throws the error a document operation's result carries, if it failed.
    func requireApplied(_ result: DocumentResult) throws -> DocumentItem? {
        guard result.outcome == .failed else { return result.item }
        throw DAVError.from(
            NimbusError(result.serverErrorCode ?? .internalError, result.reason ?? "the change could not be applied"))
    }

    /// Applies document operations in batches the service takes, each checked, each commit refused when the
    /// guard's locks do not allow it. `holding`: chunks just stored for the first batch's saves, held in its commit.
    @discardableResult
    func apply(_ operations: [DocumentOperation], holding: [String: Int64] = [:], guarding writeGuard: DAVWriteGuard)
        async throws -> [DocumentItem?]
    {
        var items: [DocumentItem?] = []
        for start in stride(from: 0, to: operations.count, by: DocumentService.maxOperationsPerBatch) {
            let batch = Array(operations[start..<min(start + DocumentService.maxOperationsPerBatch, operations.count)])
            let response = try await documents.modify(
                zone, DocumentModifyRequest(operations: batch), deviceID: session.deviceID,
                holding: start == 0 ? holding : [:], precondition: writeGuard.check(in:))
            items += try response.results.map(requireApplied)
        }
        return items
    }
}

enum DAVDepth: Sendable {
    case zero, one, infinity
}

/// A container's documents as a folder of `/dav/`: named as `nimbus device run` names its folders, the
/// container's identifier for its development environment (the one devices sync by default) and the
/// identifier with " (production)" for its production one.
struct DAVContainerFolder: Sendable, Hashable {
    var identifier: String
    var environment: String

    static let productionSuffix = " (production)"

    init(name: String) {
        if name.hasSuffix(Self.productionSuffix) {
            (identifier, environment) = (String(name.dropLast(Self.productionSuffix.count)), "production")
        } else {
            (identifier, environment) = (name, "development")
        }
    }

    init(identifier: String, environment: String) {
        self.identifier = identifier
        self.environment = environment
    }

    var name: String { environment == "production" ? identifier + Self.productionSuffix : identifier }
    var service: ZoneAddress.Service { .documents(container: identifier, environment: environment) }

    /// The folders of the containers in which the user keeps documents.
    static func all(of accountID: String, in store: any Store) async throws -> [DAVContainerFolder] {
        var folders: [DAVContainerFolder] = []
        for container in try await store.containers() {
            for environment in ["development", "production"] {
                let folder = DAVContainerFolder(identifier: container.identifier, environment: environment)
                if try await !store.zones(accountID: accountID, service: folder.service).isEmpty { folders.append(folder) }
            }
        }
        return folders
    }
}
