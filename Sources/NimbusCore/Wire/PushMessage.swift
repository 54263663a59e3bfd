/// The small JSON messages of the push socket (`GET /push/1`).
///
/// Server to device: `{"type": "zoneMoved", "zone": {...}, "sequence": N}` when a zone of the account
/// moved to sequence N. Device to server: `{"type": "applied", "zone": {...}, "sequence": N}` once the
/// device has applied everything up to N, which the server records as the device's watermark.
/// `{"type": "notification", "zone": {...}, "sequence": N, "notification": {...}}` is a record database
/// subscription firing for a change that moved the zone to N. `{"type": "connected", "sequence": 0}` is
/// the server's first message: from then on nothing is missed, so a device catches up after it.
/// `{"type": "chunksAnnounced", "zone": {...}, "sequence": 0, "announcement": {...}}` tells the account's
/// other devices which chunks of a large file's coming version another device has stored (`ChunksAnnouncement`).
package struct PushMessage: Hashable, Codable, Sendable {
    package var type: Kind
    package var zone: ZoneAddress?
    package var sequence: Int64
    /// Kept out of line: messages sit in every open socket's buffers and loops, and most are not notifications.
    private var boxedNotification: Box<RecordNotification>?
    private var boxedAnnouncement: Box<ChunksAnnouncement>?

    package var notification: RecordNotification? {
        get { boxedNotification?.value }
        set { boxedNotification = newValue.map(Box.init) }
    }

    package var announcement: ChunksAnnouncement? {
        get { boxedAnnouncement?.value }
        set { boxedAnnouncement = newValue.map(Box.init) }
    }

    package init(type: Kind, zone: ZoneAddress?, sequence: Int64, notification: RecordNotification? = nil) {
        self.type = type
        self.zone = zone
        self.sequence = sequence
        self.boxedNotification = notification.map(Box.init)
    }

    enum CodingKeys: String, CodingKey {
        case type, zone, sequence
        case boxedNotification = "notification"
        case boxedAnnouncement = "announcement"
    }

    final class Box<Value: Hashable & Codable & Sendable>: Hashable, Codable, Sendable {
        let value: Value

        init(_ value: Value) { self.value = value }
        init(from decoder: any Decoder) throws { value = try Value(from: decoder) }
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
        static func == (a: Box, b: Box) -> Bool { a.value == b.value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
    }

    package enum Kind: String, Codable, Sendable {
        case zoneMoved
        case applied
        case notification
        case connected
        case chunksAnnounced
    }
}
