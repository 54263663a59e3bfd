import Foundation
import NimbusCore
import NimbusStore

/// A user's documents in one container seen as paths: each name looked up in its folder through the
/// document zone's place index (by collision key, so `Café` found as NFC or NFD and in any case, as the
/// document service itself matches names).
struct DAVTree: Sendable {
    let store: any Store
    let zone: ZoneKey

    /// What a path names: the container's root or one live item.
    enum Node: Sendable {
        case root
        case item(DocumentItem)

        var item: DocumentItem? {
            if case .item(let item) = self { return item }
            return nil
        }
        var itemID: String? { item?.itemID }
        var isCollection: Bool { item.map { $0.kind == .folder } ?? true }
    }

    /// The node at `path`, or nil when nothing lives there.
    func node(at path: [String]) async throws -> Node? {
        var node = Node.root
        for name in path {
            guard node.isCollection, let child = try await child(named: name, in: node.itemID) else { return nil }
            node = .item(child)
        }
        return node
    }

    /// The folder (or root) that would hold `path`'s last name; a missing or non-folder parent is 409, as
    /// RFC 4918 has it for PUT, MKCOL, COPY and MOVE.
    func parent(of path: [String]) async throws -> Node {
        guard let node = try await node(at: Array(path.dropLast())), node.isCollection else {
            throw DAVError.conflict("the folder that would hold \(path.last ?? "") does not exist")
        }
        return node
    }

    func child(named name: String, in parent: String?) async throws -> DocumentItem? {
        let matches = try await store.query(
            IndexQuery(
                zones: [zone], kind: DocumentKeys.itemKind,
                conditions: [IndexCondition(field: "place", .equal(DocumentKeys.placeKey(parent: parent, name: name)))],
                limit: 1))
        return try matches.first?.entry.payload.map { try JSONDecoder().decode(DocumentItem.self, from: $0) }
    }

    /// The live items directly inside a folder (nil: the root), by name.
    func children(of parent: String?) async throws -> [DocumentItem] {
        let matches = try await store.query(
            IndexQuery(
                zones: [zone], kind: DocumentKeys.itemKind,
                conditions: [IndexCondition(field: "parent", .equal(.text(parent ?? "")))], limit: DocumentNames.maxEntries))
        let decoder = JSONDecoder()
        return try matches.compactMap { try $0.entry.payload.map { try decoder.decode(DocumentItem.self, from: $0) } }
            .filter { $0.deletedAt == nil }
            .sorted { $0.name < $1.name }
    }

    /// Every live item inside a folder, parents before their children, each with its path below it.
    func descendants(of parent: String?) async throws -> [(item: DocumentItem, path: [String])] {
        var found: [(item: DocumentItem, path: [String])] = []
        var pending: [(id: String?, path: [String])] = [(parent, [])]
        while let (id, path) = pending.popLast() {
            for child in try await children(of: id) {
                found.append((child, path + [child.name]))
                if child.kind == .folder { pending.append((child.itemID, path + [child.name])) }
            }
        }
        return found.sorted { $0.path.count < $1.path.count }
    }
}
