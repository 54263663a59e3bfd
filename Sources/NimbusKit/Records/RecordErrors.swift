import NimbusCore

/// A save refused because the record changed on the server since it was fetched (`CONFLICT`).
///
/// It carries the three versions a merge needs: the server's current record, the record the app tried to
/// save, and the ancestor both started from (the record as last fetched, before local changes).
public struct RecordConflictError: Error, Sendable {
    public var serverRecord: Record
    public var clientRecord: Record
    public var ancestorRecord: Record?
    public var underlying: NimbusError
}

/// Per-item outcomes of a modify batch that was not entirely successful.
public struct PartialFailure: Error, Sendable {
    public var errors: [RecordID: any Error]
}
