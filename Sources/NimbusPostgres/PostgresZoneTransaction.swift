import Foundation
import NimbusCore
import NimbusStore

/// One run of a zone transaction's body on PostgreSQL: reads answer from what was fetched before the run,
/// and writes are kept to be written once a run has read only what was fetched.
///
/// The writers are synchronous functions of what they read (`ZoneTransaction`); PostgreSQL answers
/// asynchronously. Rather than block a thread on each read, the store runs a body speculatively: a read of
/// something not fetched yet answers "nothing stored" and is noted as missed, the body runs to its end
/// (or throws), and the store then fetches everything missed and runs the body again on a new
/// transaction object. A run that missed nothing saw exactly what the database holds (the zone's row is
/// locked meanwhile), so its writes are the transaction's. A body's chain of dependent reads (a record,
/// then its parent, then the parent's share) costs one run and one round trip per link.
final class PostgresZoneTransaction: RecordZoneTransaction {
    /// What a run may read: everything fetched so far, kept across runs.
    struct Fetched {
        var entries: [String: StoredVersion?] = [:]
        var keyLookups: [KeyLookup: [String]] = [:]
        var acceptedGrantees: [String: Set<String>] = [:]
        var schemas: [SchemaKey: String?] = [:]
        /// Bytes the zone's owner holds in their other zones.
        var othersBytes: Int?
    }

    /// What a run read that was not fetched.
    struct Missed {
        var entries = Set<String>()
        var keyLookups = Set<KeyLookup>()
        var grantScopes = Set<String>()
        var schemas = Set<SchemaKey>()
        var othersBytes = false

        var isEmpty: Bool {
            entries.isEmpty && keyLookups.isEmpty && grantScopes.isEmpty && schemas.isEmpty && !othersBytes
        }
    }

    /// An entry as stored, with what replacing it takes away.
    struct StoredVersion {
        var entry: Entry
        var size: Int
    }

    struct KeyLookup: Hashable {
        var kind: String
        var field: String
        var value: IndexValue
    }

    struct SchemaKey: Hashable {
        var container: String
        var environment: String
    }

    /// The index rows of one version written by this run.
    struct IndexedVersion {
        var key: String
        var kind: String
        var rows: [IndexEntry]
    }

    let before: ZoneState
    private(set) var state: ZoneState
    private let fetched: Fetched
    private(set) var missed = Missed()

    /// The latest version this run wrote of each key, in the order of their last writes.
    private(set) var written: [String: StoredVersion] = [:]
    private(set) var writeOrder: [String] = []
    /// Sequences of stored versions this run replaced: their index rows go.
    private(set) var replacedSequences: [Int64] = []
    /// Index rows of the versions this run wrote (or of stored live versions it indexed), by sequence.
    private(set) var indexed: [Int64: [IndexedVersion]] = [:]
    private(set) var grantWrites: [String: [ZoneGrant]] = [:]
    /// Versions this run noted in records' histories, in order.
    private(set) var notes: [(key: String, version: RecordVersionNote)] = []
    /// Records with a noted version that was not their first: their histories are trimmed.
    private(set) var trimmedHistories = Set<String>()
    /// Records whose stored histories this run forgot (notes made after the forgetting are in `notes`).
    private(set) var forgottenHistories = Set<String>()
    private(set) var schemaWrites: [SchemaKey: String] = [:]

    init(before: ZoneState, fetched: Fetched) {
        self.before = before
        self.state = before
        self.fetched = fetched
    }

    /// The entry as this run sees it: its own writes first, then what was fetched.
    private func version(_ key: String) -> StoredVersion? {
        if let written = written[key] { return written }
        if let stored = fetched.entries[key] { return stored }
        missed.entries.insert(key)
        return nil
    }

    func entry(_ key: String) throws -> Entry? { version(key)?.entry }

    func put(_ key: String, payload: Data?, size: Int, audience: String?) throws -> Int64 {
        if let previous = version(key) {
            if previous.entry.payload != nil {
                state.liveEntries -= 1
                state.liveBytes -= previous.size
            }
            indexed[previous.entry.sequence] = nil
            if written[key] == nil { replacedSequences.append(previous.entry.sequence) }
        }
        if payload != nil {
            state.liveEntries += 1
            state.liveBytes += size
        }
        state.sequence += 1
        written[key] = StoredVersion(
            entry: Entry(key: key, payload: payload, sequence: state.sequence, audience: audience),
            size: payload == nil ? 0 : size)
        writeOrder.removeAll { $0 == key }
        writeOrder.append(key)
        return state.sequence
    }

    func index(_ key: String, kind: String, rows: [IndexEntry]) throws {
        guard let current = version(key) else {
            if missed.entries.contains(key) { return }
            throw StoreError.missing("entry \(key)")
        }
        guard current.entry.payload != nil else { throw StoreError.missing("entry \(key)") }
        indexed[current.entry.sequence, default: []].append(
            IndexedVersion(key: key, kind: kind, rows: [IndexEntry(field: IndexEntry.keyField, value: .text(key))] + rows))
    }

    func ownerBytes() throws -> Int {
        guard let others = fetched.othersBytes else {
            missed.othersBytes = true
            return state.liveBytes
        }
        return others + state.liveBytes
    }

    func setGrants(_ grants: [ZoneGrant], scope: String) throws {
        guard let accepted = fetched.acceptedGrantees[scope] else {
            missed.grantScopes.insert(scope)
            return
        }
        grantWrites[scope] = grants.map { grant in
            var grant = grant
            grant.accepted = grant.accepted || accepted.contains(grant.grantee)
            return grant
        }
    }

    func keys(kind: String, field: String, value: IndexValue) throws -> [String] {
        let lookup = KeyLookup(kind: kind, field: field, value: value)
        guard let stored = fetched.keyLookups[lookup] else {
            missed.keyLookups.insert(lookup)
            return []
        }
        // What is stored, less the entries this run replaced, plus the versions it wrote that match.
        var keys = Set(stored.filter { written[$0] == nil })
        for versions in indexed.values {
            for version in versions where version.kind == kind {
                if version.rows.contains(where: { $0.field == field && $0.value == value }) { keys.insert(version.key) }
            }
        }
        return keys.sorted()
    }

    func noteVersion(_ key: String, note: Data, first: Bool) throws {
        guard let current = version(key) else {
            if missed.entries.contains(key) { return }
            throw StoreError.missing("entry \(key)")
        }
        notes.append((key, RecordVersionNote(sequence: current.entry.sequence, note: note)))
        if !first { trimmedHistories.insert(key) }
    }

    func forgetHistory(_ key: String) throws {
        notes.removeAll { $0.key == key }
        forgottenHistories.insert(key)
    }

    func schemaText(container: String, environment: String) throws -> String? {
        let key = SchemaKey(container: container, environment: environment)
        if let written = schemaWrites[key] { return written }
        guard let stored = fetched.schemas[key] else {
            missed.schemas.insert(key)
            return nil
        }
        return stored
    }

    func setSchemaText(_ text: String, container: String, environment: String) throws {
        schemaWrites[SchemaKey(container: container, environment: environment)] = text
    }
}
