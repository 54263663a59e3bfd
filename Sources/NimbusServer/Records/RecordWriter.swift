import Foundation
import NimbusCore
import NimbusStore

/// A `records/modify` operation ready to apply: its record name is settled (generated for a create
/// without one) and, for updates that do not name it, its record type is known.
struct PreparedOperation: Sendable {
    var type: RecordOperation.OperationType
    var name: String
    var record: RecordWire
}

/// Why one operation of a batch failed; a conflict carries the record as the server has it.
struct OperationFailure: Error {
    var error: NimbusError
    var serverRecord: RecordWire?

    init(_ error: NimbusError, serverRecord: RecordWire? = nil) {
        self.error = error
        self.serverRecord = serverRecord
    }
}

/// A record a batch changed: how it was before and after (nil where it did not exist).
struct RecordChange: Sendable {
    var name: String
    var before: StoredRecord?
    var after: StoredRecord?
    /// The zone's sequence after the change.
    var sequence: Int64
    /// The shares the record is in (and has left), so pushes reach only participants who may see it.
    var membership: ShareMembership
}

/// The changes a writer made, in order, cascaded deletions included.
final class RecordChangeLog {
    private(set) var changes = [RecordChange]()
    func append(_ change: RecordChange) { changes.append(change) }
}

/// Applies modify operations inside one zone transaction. An operation checks everything before it
/// writes anything, so a failed operation leaves no trace even when the batch is not atomic.
struct RecordWriter {
    let transaction: any RecordZoneTransaction
    let schema: Schema
    let stamp: RecordWire.Stamp
    let zoneID: ZoneID
    let desiredKeys: [String]?
    let access: RecordAccess
    /// Asset files uploaded for this batch, which its records may now hold.
    let redeemedAssets: Set<String>
    /// Share records of the batch, by record name.
    let shares: [String: StoredShare]
    let log = RecordChangeLog()

    static let maxRecordBytes = 1_000_000

    func apply(_ operation: PreparedOperation) throws -> RecordWire {
        let entry = try transaction.entry(operation.name)
        let current = try entry.flatMap(LiveRecord.init)
        let requested = operation.record
        try hideUnshared(operation, current: current)
        if let current, current.record.share != nil, !access.ownsDatabase,
            operation.type == .delete || operation.type == .forceDelete
        {
            try leave(operation.name, current)
            return RecordWire(recordName: operation.name, zoneID: zoneID).deleted()
        }
        try authorize(operation, current: current)
        if operation.type.checksChangeTag, let current {
            guard requested.recordChangeTag == StoredRecord.changeTag(current.sequence) else {
                throw OperationFailure(
                    NimbusError(
                        .conflict,
                        requested.recordChangeTag == nil
                            ? "\(operation.type.rawValue) needs the record's recordChangeTag; fetch the record first"
                            : "record \(operation.name) was changed since tag \(requested.recordChangeTag!); fetch it, merge and retry"
                    ),
                    serverRecord: wire(operation.name, current.record, current.sequence))
            }
        }
        switch operation.type {
        case .delete, .forceDelete:
            guard current != nil else { throw OperationFailure(.notFound("record \(operation.name) does not exist")) }
            try delete(operation.name)
            return RecordWire(recordName: operation.name, zoneID: zoneID).deleted()
        case .create:
            guard current == nil else {
                throw OperationFailure(NimbusError(.exists, "record \(operation.name) already exists; update it instead"))
            }
            return try save(operation.name, fields: requested.fields ?? [:], over: nil, tombstone: entry, requested: requested)
        case .update, .forceUpdate:
            var merged = (current?.record.fields ?? [:]).merging(requested.fields ?? [:]) { $1 }
            for name in requested.clearedFields ?? [] where requested.fields?[name] == nil { merged[name] = nil }
            if current == nil, operation.type == .update {
                throw OperationFailure(.notFound("record \(operation.name) does not exist; create it instead"))
            }
            return try save(operation.name, fields: merged, over: current, tombstone: entry, requested: requested)
        case .replace, .forceReplace:
            if current == nil, operation.type == .replace {
                throw OperationFailure(.notFound("record \(operation.name) does not exist; create it instead"))
            }
            return try save(
                operation.name, fields: requested.fields ?? [:], over: current, tombstone: entry, requested: requested)
        }
    }

    /// In a shared hierarchy, records outside the caller's shares do not exist for them: changing or
    /// deleting one answers as for a missing record, and only creating one says that the name is taken.
    private func hideUnshared(_ operation: PreparedOperation, current: LiveRecord?) throws {
        guard let current, let shared = access.shared, shared.permission(covering: current.membership.current) == nil else {
            return
        }
        // The same answers, word for word, as for a record that does not exist.
        switch operation.type {
        case .delete, .forceDelete: throw OperationFailure(.notFound("record \(operation.name) does not exist"))
        case .update, .replace: throw OperationFailure(.notFound("record \(operation.name) does not exist; create it instead"))
        case .create, .forceUpdate, .forceReplace:
            throw OperationFailure(NimbusError(.exists, "record \(operation.name) already exists; update it instead"))
        }
    }

    /// Creating needs CREATE on the type; changing or deleting an existing record needs WRITE on it. In a
    /// shared hierarchy the record must be in a share the caller may write, and only the owner deletes
    /// its root.
    private func authorize(_ operation: PreparedOperation, current: LiveRecord?) throws {
        // A share decides who else may use the zone: only the zone's owner may change it.
        if current?.record.share != nil || operation.record.recordType == RecordService.shareType, !access.ownsDatabase {
            throw OperationFailure(.accessDenied("only the zone's owner may change its shares"))
        }
        let typeName = current?.record.recordType ?? operation.record.recordType
        let type = schema.recordTypes.first { $0.name == typeName }
        let allowed =
            current.map { access.allows(.write, type, creator: $0.record.created.userRecordName) }
            ?? (operation.type == .delete || operation.type == .forceDelete || access.allows(.create, type, creator: nil))
        guard allowed else {
            throw OperationFailure(
                .accessDenied(
                    current == nil
                        ? "you may not create \(typeName ?? "these") records here" : "you may not change record \(operation.name)"
                ))
        }
        if let shared = access.shared, let current {
            guard shared.permission(covering: current.membership.current) == .readWrite else {
                throw OperationFailure(.accessDenied("record \(operation.name) is not shared with you read-write"))
            }
            if current.record.sharedAs != nil, operation.type == .delete || operation.type == .forceDelete {
                throw OperationFailure(.accessDenied("only the owner deletes the root of a shared hierarchy"))
            }
        }
    }

    /// Saves a record over its current version, or over nothing (`tombstone` then holds what a deleted
    /// record left: the shares it was in, whose participants must still learn of its fate).
    private func save(
        _ name: String, fields: [String: FieldValue], over current: LiveRecord?, tombstone: Entry?, requested: RecordWire
    )
        throws -> RecordWire
    {
        guard let recordType = current?.record.recordType ?? requested.recordType else {
            throw OperationFailure(.badRequest("record \(name) does not exist, so the operation must name its recordType"))
        }
        if let other = requested.recordType, other != recordType {
            throw OperationFailure(.badRequest("record \(name) is a \(recordType); it cannot become a \(other)"))
        }
        var share = shares[name]
        if share != nil, name != RecordService.zoneShareName {
            share?.root = try hierarchyRoot(of: name, requested: requested, current: current?.record)
        }
        let fields = try resolveAssets(share == nil ? try conform(fields, to: recordType) : [:], current: current?.record)
        var record = StoredRecord(
            recordType: recordType, fields: fields, created: current?.record.created ?? stamp, modified: stamp,
            parent: requested.parent ?? current?.record.parent)
        record.share = share
        record.sharedAs = current?.record.sharedAs
        for (field, reference) in record.references {
            if let zone = reference.zoneID, zone.zoneName != zoneID.zoneName {
                throw OperationFailure(
                    .badRequest("reference \(field) points into zone \(zone.zoneName); references stay within a zone"))
            }
            if reference.action == .validate, reference.recordName != name {
                guard let target = try visible(reference.recordName) else {
                    throw OperationFailure(
                        NimbusError(
                            .validatingReferenceError,
                            "field \(field) references record \(reference.recordName), which does not exist"))
                }
                // A VALIDATE reference keeps its target from being deleted: in the public database, where
                // records of many users meet, it may only point at a record the caller may change.
                let targetType = schema.recordTypes.first { $0.name == target.record.recordType }
                if access.isPublic, !access.allows(.write, targetType, creator: target.record.created.userRecordName) {
                    throw OperationFailure(
                        .accessDenied(
                            "field \(field) may not VALIDATE record \(reference.recordName): you may not change it, so you may not keep it from being deleted; use NONE"
                        ))
                }
            }
        }
        let moved = record.parent?.recordName != current?.record.parent?.recordName
        if access.shared != nil, moved, current?.record.sharedAs != nil {
            throw OperationFailure(.accessDenied("only the owner moves the root of a shared hierarchy"))
        }
        if moved, let parent = record.parent?.recordName, try isAncestor(name, of: parent) {
            throw OperationFailure(.badRequest("record \(name) cannot have \(parent) as its parent: \(parent) hangs under it"))
        }
        let before = current?.membership ?? ShareMembership(audience: tombstone?.audience)
        let membership = before.moved(to: try coveringShare(name, record))
        if let shared = access.shared, shared.permission(covering: membership.current) != .readWrite {
            throw OperationFailure(
                .accessDenied(
                    current == nil
                        ? "a record you create in a shared hierarchy needs a parent in it"
                        : "record \(name) cannot leave the hierarchy shared with you"))
        }
        let sequence = try store(name, record, membership: membership, over: current)
        if membership.current != before.current { try reshare(below: name, to: membership.current) }
        if let share {
            try transaction.setGrants(share.grants(scope: name), scope: name)
            if let root = share.root { try attach(root: root, to: name) }
        }
        return wire(name, record, sequence)
    }

    /// A participant deleting a share leaves it, as in CloudKit: they drop out of its participants and
    /// lose what it granted; the share stands for everyone else.
    private func leave(_ name: String, _ current: LiveRecord) throws {
        var record = current.record
        guard var share = record.share, share.participants.contains(where: { $0.userRecordName == stamp.userRecordName }) else {
            throw OperationFailure(.accessDenied("only the zone's owner may change its shares"))
        }
        share.participants.removeAll { $0.userRecordName == stamp.userRecordName }
        record.share = share
        record.modified = stamp
        try store(name, record, membership: current.membership, over: current)
        try transaction.setGrants(share.grants(scope: name), scope: name)
    }

    /// Writes a version of a record (payload, index rows, the shares it is in, a note in its history) and
    /// logs the change.
    @discardableResult
    private func store(_ name: String, _ record: StoredRecord, membership: ShareMembership, over before: LiveRecord?) throws
        -> Int64
    {
        let payload = try record.encoded()
        guard payload.count <= Self.maxRecordBytes else {
            throw OperationFailure(
                NimbusError(
                    .requestTooLarge, "record \(name) is \(payload.count) bytes; a record holds at most 1 MB besides its assets"))
        }
        // What the record counts against its owner's quota: its bytes and its assets' files.
        let assetBytes = record.fields.values.flatMap(StoredRecord.assets).reduce(0) { $0 + ($1.size ?? 0) }
        let sequence = try transaction.put(
            name, payload: payload, size: payload.count + Int(assetBytes), audience: membership.audience)
        let systemFields = RecordIndexer.indexedSystemFields(schema.recordTypes.first { $0.name == record.recordType })
        try transaction.index(
            name, kind: record.recordType,
            rows: RecordIndexer.rows(name: name, record: record, share: membership.current, systemFields: systemFields))
        let version = RecordVersion(
            record, share: membership.current, over: before?.record, previousShare: before?.membership.current, by: stamp)
        try transaction.noteVersion(name, note: version.encoded(), first: before == nil)
        log.append(RecordChange(name: name, before: before?.record, after: record, sequence: sequence, membership: membership))
        return sequence
    }

    /// The root record a hierarchy share is for, checked: it exists, is no share itself and is in no other share.
    private func hierarchyRoot(of share: String, requested: RecordWire, current: StoredRecord?) throws -> String {
        let stored = current?.share?.root
        guard let name = requested.forRecord?.recordName ?? stored else {
            throw OperationFailure(.badRequest("share \(share) needs forRecord: the root record of the hierarchy it shares"))
        }
        if let stored, stored != name {
            throw OperationFailure(.badRequest("share \(share) is for record \(stored); a share's root cannot change"))
        }
        guard let root = try live(name) else {
            throw OperationFailure(.notFound("forRecord names record \(name), which does not exist in this zone"))
        }
        guard root.record.recordType != RecordService.shareType else {
            throw OperationFailure(.badRequest("a share record cannot be the root of a shared hierarchy"))
        }
        if let other = root.record.sharedAs ?? root.membership.current, other != share {
            throw OperationFailure(
                NimbusError(.alreadyShared, "record \(name) is already in share \(other); a record is in one share at most"))
        }
        return name
    }

    /// The share a record falls under: its own when it is a share record or a shared root, else its parent's.
    private func coveringShare(_ name: String, _ record: StoredRecord) throws -> String? {
        if record.recordType == RecordService.shareType { return name == RecordService.zoneShareName ? nil : name }
        if let sharedAs = record.sharedAs { return sharedAs }
        guard let parent = record.parent?.recordName, parent != name else { return nil }
        return try live(parent)?.membership.current
    }

    /// Whether `ancestor` is `name` or lies on its chain of parents.
    private func isAncestor(_ ancestor: String, of name: String) throws -> Bool {
        var next: String? = name
        var seen = Set<String>()
        while let current = next, seen.insert(current).inserted {
            if current == ancestor { return true }
            next = try live(current)?.record.parent?.recordName
        }
        return false
    }

    /// Makes a record the root of a share, and its hierarchy the share's.
    private func attach(root name: String, to share: String) throws {
        guard let root = try live(name), root.record.sharedAs != share else { return }
        var record = root.record
        record.sharedAs = share
        try store(name, record, membership: root.membership.moved(to: share), over: root)
        try reshare(below: name, to: share)
    }

    /// Ends a share at its root: the hierarchy falls back under whatever covers the root's parent.
    private func detach(root name: String, from share: String) throws {
        guard let root = try live(name), root.record.sharedAs == share else { return }
        var record = root.record
        record.sharedAs = nil
        // A parent chain that leads back into the hierarchy (saved before cycles were refused) must not keep it in the share.
        let covering = try coveringShare(name, record).flatMap { $0 == share ? nil : $0 }
        try store(name, record, membership: root.membership.moved(to: covering), over: root)
        try reshare(below: name, to: covering)
    }

    /// Carries a record's new share down its hierarchy: descendants follow their parent, except roots of
    /// shares of their own (and what hangs under them). Each moved record gets a new version, so change
    /// feeds show it arriving in, or leaving, a participant's view.
    private func reshare(below top: String, to share: String?) throws {
        var pending = [top]
        var visited: Set = [top]
        while let parent = pending.popLast() {
            for type in schema.recordTypes {
                for child in try transaction.keys(kind: type.name, field: RecordIndexer.parentField, value: .text(parent))
                where visited.insert(child).inserted {
                    guard let live = try live(child), live.record.sharedAs == nil, live.membership.current != share else {
                        continue
                    }
                    try store(child, live.record, membership: live.membership.moved(to: share), over: live)
                    pending.append(child)
                }
            }
        }
    }

    /// Checks fields against the record type's schema and gives each value the field's type where the
    /// client left it to inference (a whole number sent for a DOUBLE or TIMESTAMP field).
    private func conform(_ fields: [String: FieldValue], to recordType: String) throws -> [String: FieldValue] {
        guard let type = schema.recordTypes.first(where: { $0.name == recordType }) else {
            throw OperationFailure(
                .badRequest("record type \(recordType) is not in this environment's schema; create it in development and deploy"))
        }
        var conformed = [String: FieldValue]()
        for (name, value) in fields {
            guard let field = type.fields.first(where: { $0.name == name }) else {
                throw OperationFailure(
                    .badRequest(
                        "record type \(recordType) has no field \(name) in this environment's schema; add it in development and deploy"
                    ))
            }
            guard let typed = FieldTypes.conform(value, to: field.wireType) else {
                throw OperationFailure(.badRequest("field \(name) of \(recordType) is \(field.wireType), not \(value.typeName)"))
            }
            conformed[name] = typed
        }
        return conformed
    }

    /// A record may hold an asset file uploaded for this batch, or one it already held (a fetched value
    /// sent back unchanged, which keeps the stored checksum and size whatever the client sent); naming any
    /// other file, or an asset without a receipt, is refused.
    private func resolveAssets(_ fields: [String: FieldValue], current: StoredRecord?) throws -> [String: FieldValue] {
        var held = [String: AssetValue]()
        for value in current?.fields.values ?? [:].values {
            for asset in StoredRecord.assets(value) { if let id = asset.assetID { held[id] = asset } }
        }
        func resolve(_ value: FieldValue, _ name: String) throws -> FieldValue {
            switch value {
            case .asset(let asset):
                guard let id = asset.assetID else {
                    throw OperationFailure(.badRequest("field \(name) needs the receipt of an upload (assets/upload)"))
                }
                if redeemedAssets.contains(id) { return value }
                guard let stored = held[id] else {
                    throw OperationFailure(
                        .badRequest("field \(name) names an asset file without its upload receipt (\(id.prefix(8))…)"))
                }
                return .asset(stored)
            case .list(let values, let elementType):
                return .list(try values.map { try resolve($0, name) }, elementType: elementType)
            default: return value
            }
        }
        var resolved = [String: FieldValue]()
        for (name, value) in fields { resolved[name] = try resolve(value, name) }
        return resolved
    }

    /// Deletes a record with every record that references it with DELETE_SELF, recursively; refuses when a
    /// record outside that set references one of them with VALIDATE.
    private func delete(_ root: String) throws {
        var doomed = [root]
        var members: Set<String> = [root]
        var validating = [(referrer: String, target: String)]()
        var next = 0
        while next < doomed.count {
            let target = doomed[next]
            next += 1
            for (kind, field) in referenceFields {
                for referrer in try transaction.keys(kind: kind, field: field, value: .text(target))
                where !members.contains(referrer) {
                    guard let record = try live(referrer)?.record else { continue }
                    let actions = record.references.filter { $0.field == field && $0.reference.recordName == target }.map(
                        \.reference.action)
                    if actions.contains(.deleteSelf) {
                        doomed.append(referrer)
                        members.insert(referrer)
                    } else if actions.contains(.validate) {
                        validating.append((referrer, target))
                    }
                }
            }
        }
        if let shared = access.shared {
            for name in doomed.dropFirst() {
                guard let record = try live(name) else { continue }
                guard shared.permission(covering: record.membership.current) == .readWrite, record.record.sharedAs == nil,
                    record.record.share == nil
                else {
                    throw OperationFailure(
                        .accessDenied(
                            "deleting \(root) would delete records you may not delete (they reference it with DELETE_SELF)"))
                }
            }
        }
        if let blocker = validating.first(where: { !members.contains($0.referrer) }) {
            let referrer = try visible(blocker.referrer) == nil ? "a record not shared with you" : "record \(blocker.referrer)"
            throw OperationFailure(
                NimbusError(
                    .validatingReferenceError, "\(referrer) references \(blocker.target) with VALIDATE; it must change first"))
        }
        let removed = try doomed.compactMap { name in try remove(name).map { (name, $0) } }
        // A shared root takes its share along; records left without their parent leave its share.
        for (name, before) in removed {
            if let share = before.record.sharedAs { try remove(share) }
            if before.membership.current != nil { try reshare(below: name, to: nil) }
        }
    }

    /// Tombstones one record, keeping the shares it was in; a share's grants go with it and its root is
    /// no longer shared. Returns the record as it was, nil when there was none.
    @discardableResult private func remove(_ name: String) throws -> LiveRecord? {
        guard let before = try live(name) else { return nil }
        let sequence = try transaction.put(name, payload: nil, size: 0, audience: before.membership.audience)
        try transaction.forgetHistory(name)
        log.append(RecordChange(name: name, before: before.record, after: nil, sequence: sequence, membership: before.membership))
        if let share = before.record.share {
            try transaction.setGrants([], scope: name)
            if let root = share.root { try detach(root: root, from: name) }
        }
        return before
    }

    /// Every (record type, field) of the schema that can hold references.
    private var referenceFields: [(kind: String, field: String)] {
        schema.recordTypes.flatMap { type in type.fields.filter { $0.type == "REFERENCE" }.map { (type.name, $0.name) } }
    }

    /// A record as this transaction sees it, unless deleted.
    struct LiveRecord {
        var record: StoredRecord
        var sequence: Int64
        var membership: ShareMembership

        /// The entry's record; nil for a tombstone.
        init?(_ entry: Entry) throws {
            guard entry.payload != nil else { return nil }
            record = try StoredRecord(entry: entry)
            sequence = entry.sequence
            membership = ShareMembership(audience: entry.audience)
        }
    }

    private func live(_ name: String) throws -> LiveRecord? {
        try transaction.entry(name).flatMap(LiveRecord.init)
    }

    /// A live record the caller may see: in a shared hierarchy, only its shares' records exist for them.
    private func visible(_ name: String) throws -> LiveRecord? {
        guard let record = try live(name) else { return nil }
        guard let shared = access.shared else { return record }
        return shared.permission(covering: record.membership.current) == nil ? nil : record
    }

    private func wire(_ name: String, _ record: StoredRecord, _ sequence: Int64) -> RecordWire {
        record.wire(name: name, sequence: sequence, zoneID: zoneID, desiredKeys: desiredKeys)
    }
}

extension RecordWire {
    /// The record as a change feed or a delete reports it: gone.
    func deleted() -> RecordWire {
        var record = self
        record.deleted = true
        return record
    }
}
