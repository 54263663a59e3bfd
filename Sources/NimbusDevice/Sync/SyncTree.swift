/// An item's identity in a container, the same on the server and on every device: it survives renames
/// and moves. A device names the items it creates, so an item created offline has its ID before the
/// server has seen it.
public struct ItemID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// A new item's ID: 15 random letters and digits (89 bits), short enough for Swift to keep the string
    /// inline — at 100,000 items a heap string per ID, in every tree and plan, cost tens of megabytes.
    public static func random() -> ItemID {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        var generator = SystemRandomNumberGenerator()
        return ItemID(String(decoding: (0..<15).map { _ in alphabet[Int.random(in: 0..<62, using: &generator)] }, as: UTF8.self))
    }
}

public enum ItemKind: String, Hashable, Sendable, Codable {
    case file
    case folder
    /// A folder synced and versioned as one document (`.pages` bundles).
    case package
}

/// Where an item sits: its parent folder (`nil`: the container's root) and its name there.
public struct Place: Hashable, Sendable, CustomStringConvertible {
    public var parent: ItemID?
    public var name: String
    public init(parent: ItemID?, name: String) {
        self.parent = parent
        self.name = name
    }
    public var description: String { "\(parent?.rawValue ?? "/")/\(name)" }
}

/// One item as one side sees it: its place, its kind, and for files and packages the hash of the
/// content of the version it holds.
public struct SyncItem: Hashable, Sendable, CustomStringConvertible {
    // The kind after the content key fills its padding: 72 bytes an item rather than 80.
    /// The content's hash, inline: a round holds several tables of every item.
    var contentKey: ContentKey?
    public var kind: ItemKind
    public var place: Place

    public var content: String? {
        get { contentKey?.text }
        set { contentKey = newValue.map(ContentKey.init) }
    }

    public init(place: Place, kind: ItemKind, content: String?) {
        self.init(place: place, kind: kind, contentKey: content.map(ContentKey.init))
    }

    init(place: Place, kind: ItemKind, contentKey: ContentKey?) {
        self.place = place
        self.kind = kind
        self.contentKey = contentKey
    }

    public var description: String { "\(kind) \(place) \(content ?? "-")" }

    func moved(to place: Place) -> SyncItem {
        var item = self
        item.place = place
        return item
    }

    /// Whether the two hold different bytes (a different kind counts as different bytes).
    func differsInContent(from other: SyncItem) -> Bool { kind != other.kind || contentKey != other.contentKey }
}

/// A side's view of a container: the remote tree (what the server says), the local tree (what the disk
/// says) or the synced tree (what both last agreed on).
public struct SyncTree: Equatable, Sendable {
    public var items: ItemTable<SyncItem>

    public init(_ items: ItemTable<SyncItem> = ItemTable()) { self.items = items }

    public subscript(id: ItemID) -> SyncItem? {
        get { items[id] }
        set { items[id] = newValue }
    }

    /// Which item holds each place, for finding collisions without a scan per item.
    func placeIndex() -> PlaceIndex { PlaceIndex(items) }

    /// Whether `id` is `ancestor` or lies somewhere inside it.
    func isWithin(_ id: ItemID?, _ ancestor: ItemID) -> Bool {
        var current = id
        var steps = 0
        while let next = current, steps <= items.count {
            if next == ancestor { return true }
            current = items[next]?.place.parent
            steps += 1
        }
        return false
    }

    /// How many folders lie between the item and the root (items whose parent is missing count as at
    /// the root).
    func depth(of id: ItemID) -> Int {
        var depth = 0
        var current = items[id]?.place.parent
        while let next = current, depth <= items.count {
            depth += 1
            current = items[next]?.place.parent
        }
        return depth
    }
}

/// Which item holds a place (the first one added, if several do), found through the places' hashes.
struct PlaceIndex {
    private let items: ItemTable<SyncItem>
    private let positions: PositionIndex

    init(_ items: ItemTable<SyncItem>) {
        self.items = items
        positions = PositionIndex(count: items.count) { items.values[$0].place.hashValue }
    }

    subscript(place: Place) -> ItemID? {
        positions.first(place.hashValue) { items.values[$0].place == place }.map { items.keys[$0] }
    }
}
