import Foundation
import NimbusCore

/// A record: typed fields plus the system fields the server keeps (CloudKit's `CKRecord`).
///
/// ```swift
/// var item = Record(recordType: "Items")
/// item["name"] = "milk"
/// item["list"] = Reference(list, action: .deleteSelf)
/// item = try await database.save(item)
/// ```
public struct Record: Sendable, Hashable {
    public let recordID: RecordID
    public let recordType: String
    /// The server's version of the record; nil until it has been saved.
    public internal(set) var recordChangeTag: String?
    public internal(set) var creationDate: Date?
    public internal(set) var modificationDate: Date?
    public internal(set) var creatorUserRecordName: String?
    public internal(set) var lastModifiedUserRecordName: String?
    /// The record this one hangs under; a shared record's descendants by `parent` are shared with it.
    public var parent: Reference?
    /// For the root of a shared hierarchy: its share record.
    public internal(set) var share: Reference?

    private(set) var fields: [String: FieldValue]
    /// The fields as the server last sent them, for the ancestor of a conflict.
    private var serverFields: [String: FieldValue]?
    /// Keys set since the record was fetched or saved; what the `changedKeys` save policy sends.
    public private(set) var changedKeys: Set<String> = []
    /// Local files set as assets, uploaded when the record is saved.
    var pendingUploads: [String: URL] = [:]

    /// A new record; without a record ID it gets a time-ordered UUID in the default zone.
    public init(recordType: String, recordID: RecordID? = nil) {
        self.recordType = recordType
        self.recordID = recordID ?? RecordID(recordName: UUIDString.timeOrdered().uuidString)
        self.fields = [:]
    }

    public init(recordType: String, zoneID: RecordZoneID) {
        self.init(recordType: recordType, recordID: RecordID(recordName: UUIDString.timeOrdered().uuidString, zoneID: zoneID))
    }

    public subscript<Value: RecordValue>(key: String) -> Value? {
        get { fields[key].flatMap(Value.init(fieldValue:)) }
        set {
            self[field: key] = newValue?.fieldValue
            pendingUploads[key] = (newValue as? Asset)?.fileURL
        }
    }

    /// A field as its wire value, whatever its type; nil when the record has no value for it.
    public subscript(field key: String) -> FieldValue? {
        get { fields[key] }
        set {
            fields[key] = newValue
            changedKeys.insert(key)
        }
    }

    public var allKeys: [String] { fields.keys.sorted() }

    init(wire: RecordWire, zoneID: RecordZoneID) throws {
        guard let name = wire.recordName, let type = wire.recordType else {
            throw NimbusError(.internalError, "the server answered a record without its name or type")
        }
        let zone = wire.zoneID.map(RecordZoneID.init) ?? zoneID
        self.init(recordType: type, recordID: RecordID(recordName: name, zoneID: zone))
        fields = wire.fields ?? [:]
        serverFields = fields
        recordChangeTag = wire.recordChangeTag
        creationDate = wire.created.map { Date(milliseconds: $0.timestamp) }
        modificationDate = wire.modified.map { Date(milliseconds: $0.timestamp) }
        creatorUserRecordName = wire.created?.userRecordName
        lastModifiedUserRecordName = wire.modified?.userRecordName
        parent = wire.parent.map { Reference($0, zoneID: zone) }
        share = wire.share.map { Reference($0, zoneID: zone) }
    }

    /// Puts an uploaded file's receipt in place of a local file.
    mutating func setUploaded(_ key: String, _ value: AssetValue) {
        fields[key] = .asset(value)
        pendingUploads[key] = nil
    }

    /// The record as it was when last fetched or saved, before local changes; nil for a new record.
    var ancestor: Record? {
        guard let serverFields else { return nil }
        var ancestor = self
        ancestor.fields = serverFields
        ancestor.changedKeys = []
        return ancestor
    }

    /// The record as a modify operation sends it: all fields, or only the changed ones.
    func wire(onlyChangedKeys: Bool) -> RecordWire {
        var record = RecordWire(
            recordName: recordID.recordName, recordType: recordType, recordChangeTag: recordChangeTag,
            fields: onlyChangedKeys ? fields.filter { changedKeys.contains($0.key) } : fields)
        // A key set to nil is sent as cleared, so the server removes it under every policy.
        let cleared = changedKeys.filter { fields[$0] == nil }
        record.clearedFields = cleared.isEmpty ? nil : cleared
        record.parent = parent?.wire
        return record
    }
}
