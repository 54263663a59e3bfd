import Foundation
import NimbusCore
import NimbusStore

/// Dead properties (RFC 4918 §4): whatever a client sets with PROPPATCH on an item (Windows' `Win32*`
/// times and attributes, an editor's own notes), kept as the XML it sent under the item's ID, so they
/// follow the item through moves and renames, whichever door moved it.
struct DAVProperties: Sendable {
    let store: any Store
    let zone: ZoneKey
    /// The owner's storage quota in bytes.
    let quota: Int

    /// Bytes of dead properties one item may hold; they count against the owner's storage.
    static let maxBytesPerItem = 64 << 10

    struct Stored: Codable, Sendable {
        var properties: [Property] = []

        struct Property: Codable, Sendable {
            var name: DAVPropertyName
            /// The property's element as XML that stands alone (`DAVElement.serialized`).
            var xml: String
        }
    }

    /// The item's dead properties (nil: the container's root).
    func read(_ item: String?) async throws -> [DAVPropertyName: String] {
        try await read([item])[item] ?? [:]
    }

    /// The dead properties of several items, read at once; items without any are left out.
    func read(_ items: [String?]) async throws -> [String?: [DAVPropertyName: String]] {
        let owners = Dictionary(items.map { (DocumentKeys.davProperties($0), $0) }, uniquingKeysWith: { first, _ in first })
        var found: [String?: [DAVPropertyName: String]] = [:]
        let decoder = JSONDecoder()
        for entry in try await store.entries(zone, keys: Array(owners.keys)) {
            guard let payload = entry.payload, let owner = owners[entry.key] else { continue }
            let stored = try decoder.decode(Stored.self, from: payload)
            found[owner] = Dictionary(stored.properties.map { ($0.name, $0.xml) }, uniquingKeysWith: { _, last in last })
        }
        return found
    }

    /// Sets and removes properties in one transaction: all of them or, when they would not fit or the guard's
    /// locks refuse, none.
    func update(
        _ item: String?, set: [DAVPropertyName: String], remove: Set<DAVPropertyName>, guarding writeGuard: DAVWriteGuard
    ) async throws {
        let (key, quota) = (DocumentKeys.davProperties(item), quota)
        try await store.transact(zone, creating: true) { transaction in
            try writeGuard.check(in: transaction)
            let before = try transaction.ownerBytes()
            var properties: [DAVPropertyName: String] = [:]
            if let payload = try transaction.entry(key)?.payload {
                for property in try JSONDecoder().decode(Stored.self, from: payload).properties {
                    properties[property.name] = property.xml
                }
            }
            for name in remove { properties[name] = nil }
            properties.merge(set) { _, new in new }
            try Self.write(properties, key: key, in: transaction)
            let used = try transaction.ownerBytes()
            guard used <= quota || used <= before else {
                throw DAVError(
                    DAVError.insufficientStorage, .quotaExceeded, "the owner's storage is full; delete documents first")
            }
        }
    }

    /// Gives each target the dead properties its source has (COPY copies them, RFC 4918 §9.8.2; a Finder file
    /// moved takes its own), in one transaction.
    func copy(_ pairs: [(from: String?, to: String)]) async throws {
        let sources = try await read(pairs.map(\.from))
        let copies = pairs.compactMap { pair in sources[pair.from].map { (DocumentKeys.davProperties(pair.to), $0) } }
        guard !copies.isEmpty else { return }
        let quota = quota
        try await store.transact(zone, creating: true) { transaction in
            let before = try transaction.ownerBytes()
            for (key, properties) in copies { try Self.write(properties, key: key, in: transaction) }
            let used = try transaction.ownerBytes()
            guard used <= quota || used <= before else {
                throw DAVError(
                    DAVError.insufficientStorage, .quotaExceeded, "the owner's storage is full; delete documents first")
            }
        }
    }

    /// Forgets the dead properties of items deleted through WebDAV, in one transaction.
    func forget(_ items: [String]) async throws {
        let keys = try await store.entries(zone, keys: items.map { DocumentKeys.davProperties($0) })
            .filter { $0.payload != nil }.map(\.key)
        guard !keys.isEmpty else { return }
        try await store.transact(zone, creating: false) { transaction in
            for key in keys { try transaction.put(key, payload: nil, size: 0) }
        }
    }

    private static func write(
        _ properties: [DAVPropertyName: String], key: String, in transaction: any ZoneTransaction
    ) throws {
        guard !properties.isEmpty else {
            if try transaction.entry(key)?.payload != nil { try transaction.put(key, payload: nil, size: 0) }
            return
        }
        let stored = Stored(
            properties: properties.sorted { $0.key < $1.key }.map { Stored.Property(name: $0.key, xml: $0.value) })
        let payload = try JSONEncoder().encode(stored)
        guard payload.count <= maxBytesPerItem else {
            throw DAVError(
                DAVError.insufficientStorage, .quotaExceeded,
                "an item holds at most \(maxBytesPerItem) bytes of properties; remove some first")
        }
        try transaction.put(key, payload: payload, size: payload.count)
    }
}
