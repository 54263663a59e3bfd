import Foundation
import NimbusCore
import NimbusStore

/// What a record's history says of one of its versions (the server's words in a `RecordVersionNote`): who
/// wrote it, when, from which device, and what it changed. It names the fields that changed and never
/// holds their values: a value a user took out of a record must not live on in the record's history.
struct RecordVersion: Codable, Sendable, Hashable {
    /// Who wrote the version, when, from which device.
    var stamp: RecordWire.Stamp
    var created: Bool
    /// Fields set, changed or cleared, by name.
    var fields: [String]
    /// Whether the record moved under another parent.
    var moved: Bool
    /// Whether the record entered or left a share (the only change of a record carried along with its
    /// hierarchy's root).
    var shared: Bool

    /// The version `after`, under share `share`, of a record that was `before` under `previousShare`
    /// (`before` nil: created), written by `stamp`.
    init(
        _ after: StoredRecord, share: String?, over before: StoredRecord?, previousShare: String?, by stamp: RecordWire.Stamp
    ) {
        self.stamp = stamp
        created = before == nil
        let names = Set(after.fields.keys).union(before?.fields.keys ?? [:].keys)
        fields = names.filter { after.fields[$0] != before?.fields[$0] }.sorted()
        moved = before != nil && after.parent?.recordName != before?.parent?.recordName
        shared = share != previousShare
    }

    /// The note's bytes, written by hand as the record itself is (histories are written on every save).
    func encoded() -> Data {
        var json = JSONWriter()
        json.raw("{\"stamp\":")
        stamp.write(to: &json)
        json.raw(",\"created\":")
        json.bool(created)
        json.raw(",\"fields\":[")
        for (index, name) in fields.enumerated() {
            if index > 0 { json.raw(",") }
            json.string(name)
        }
        json.raw("],\"moved\":")
        json.bool(moved)
        json.raw(",\"shared\":")
        json.bool(shared)
        json.raw("}")
        return Data(json.bytes)
    }

    /// A stored note; nil for one this server cannot read (written by a later version, say).
    init?(note: RecordVersionNote) {
        guard let decoded = try? JSONDecoder().decode(Self.self, from: note.note) else { return nil }
        self = decoded
    }
}
