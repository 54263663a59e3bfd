import Foundation
import NimbusCore
import NimbusStore

/// A record as a zone entry's payload holds it. The change tag is not stored: it is the entry's sequence,
/// which every write advances.
struct StoredRecord: Codable, Sendable {
    var recordType: String
    var fields: [String: FieldValue]
    var created: RecordWire.Stamp
    var modified: RecordWire.Stamp
    var parent: RecordReference?
    /// For a share record: who the zone or hierarchy is shared with.
    var share: StoredShare?
    /// For the root of a shared hierarchy: the name of its share record.
    var sharedAs: String?

    static func changeTag(_ sequence: Int64) -> String { String(sequence, radix: 36) }

    func wire(name: String, sequence: Int64, zoneID: ZoneID, desiredKeys: [String]?) -> RecordWire {
        var record = RecordWire(
            recordName: name, recordType: recordType, recordChangeTag: Self.changeTag(sequence),
            fields: desiredKeys.map { keys in fields.filter { keys.contains($0.key) } } ?? fields, zoneID: zoneID)
        record.created = created
        record.modified = modified
        record.parent = parent
        record.share = sharedAs.map { RecordReference(recordName: $0, zoneID: zoneID, action: RecordReference.Action.none) }
        if let share {
            record.forRecord = share.root.map {
                RecordReference(recordName: $0, zoneID: zoneID, action: RecordReference.Action.none)
            }
            record.publicPermission = "NONE"
            record.participants = share.participants.map(\.wire)
            record.shortGUID = share.shortGUID
        }
        return record
    }

    /// The payload: `Codable`'s JSON of this record, written by hand (records are written on every save).
    func encoded() throws -> Data {
        var json = JSONWriter()
        json.raw("{\"recordType\":")
        json.string(recordType)
        json.raw(",\"fields\":")
        try json.fields(fields)
        json.raw(",\"created\":")
        created.write(to: &json)
        json.raw(",\"modified\":")
        modified.write(to: &json)
        if let parent {
            json.raw(",\"parent\":")
            parent.write(to: &json)
        }
        if let share {
            json.raw(",\"share\":")
            try json.value(share)
        }
        if let sharedAs {
            json.raw(",\"sharedAs\":")
            json.string(sharedAs)
        }
        json.raw("}")
        return Data(json.bytes)
    }

    /// Whether stored bytes can go out as they are: not a share record or a shared root (their `share` and
    /// `sharedAs` keys are internal) and holding no asset (whose download URL is added on the way out).
    /// A string that merely contains these words only takes the slower path.
    static func isSpliceable(_ payload: Data) -> Bool {
        payload.first == UInt8(ascii: "{") && !contains(payload, "\"share") && !contains(payload, "ASSETID")
    }

    /// Whether `bytes` holds `word`: `memchr` finds each candidate first byte, `memcmp` checks the rest.
    /// Foundation's `Data.range(of:)` on Linux compares byte by byte through `NSData` and took a fifth of
    /// the server's time in change feeds.
    static func contains(_ bytes: Data, _ word: StaticString) -> Bool {
        bytes.withUnsafeBytes { haystack in
            let length = word.utf8CodeUnitCount
            guard let base = haystack.baseAddress, length > 0, haystack.count >= length else { return false }
            let first = Int32(word.utf8Start.pointee)
            let lastStart = base + (haystack.count - length)
            var start = base
            while start <= lastStart, let found = memchr(start, first, lastStart - start + 1) {
                if memcmp(found, word.utf8Start, length) == 0 { return true }
                start = UnsafeRawPointer(found) + 1
            }
            return false
        }
    }

    init(
        recordType: String, fields: [String: FieldValue], created: RecordWire.Stamp, modified: RecordWire.Stamp,
        parent: RecordReference?
    ) {
        self.recordType = recordType
        self.fields = fields
        self.created = created
        self.modified = modified
        self.parent = parent
    }

    init(entry: Entry) throws {
        try self.init(payload: entry.payload ?? Data())
    }

    init(payload: Data) throws {
        self = try JSONDecoder().decode(Self.self, from: payload)
    }

    /// The ids of the asset files the record holds.
    /// The asset values the record holds, in fields and lists.
    var assetValues: [AssetValue] { fields.values.flatMap(Self.assets) }

    var assetIDs: [String] { assetValues.compactMap(\.assetID) }

    /// Bytes every payload holding an asset contains: scans decode only payloads that have them.
    static let assetMarker = Data("ASSETID".utf8)

    /// The assets of a field value, in lists too.
    static func assets(_ value: FieldValue) -> [AssetValue] {
        switch value {
        case .asset(let asset): [asset]
        case .list(let values, _): values.flatMap(assets)
        default: []
        }
    }

    /// Every reference the record holds, in fields (lists included) and as its parent.
    var references: [(field: String, reference: RecordReference)] {
        var found = [(String, RecordReference)]()
        for (name, value) in fields {
            switch value {
            case .reference(let reference): found.append((name, reference))
            case .list(let values, _):
                for case .reference(let reference) in values { found.append((name, reference)) }
            default: break
            }
        }
        if let parent { found.append((RecordIndexer.parentField, parent)) }
        return found
    }
}

/// A share as its share record keeps it; acceptance lives with the zone's grants (one scope per share).
struct StoredShare: Codable, Sendable {
    struct Participant: Codable, Sendable {
        var userRecordName: String
        var emailAddress: String?
        var permission: ZoneGrant.Permission

        var wire: ShareParticipant {
            ShareParticipant(
                userIdentity: .init(userRecordName: userRecordName, emailAddress: emailAddress),
                permission: permission == .readWrite ? "READ_WRITE" : "READ_ONLY", type: "USER", acceptanceStatus: "INVITED")
        }
    }

    var participants: [Participant]
    var shortGUID: String
    /// A hierarchy's root record; nil for a zone share.
    var root: String?

    /// What the share grants its participants, as the zone's grants of the share's scope.
    func grants(scope: String) -> [ZoneGrant] {
        participants.map { ZoneGrant(scope: scope, grantee: $0.userRecordName, permission: $0.permission) }
    }
}

extension ZoneGrant.Permission: Codable {}
