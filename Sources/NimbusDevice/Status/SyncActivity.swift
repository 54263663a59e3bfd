import Foundation
import NimbusCore

/// What the engine is doing and what stopped it, kept for the control socket: the steps the last plan
/// left to do, transfers in progress, the server's refusal of an item, and why the last round failed.
/// The engine writes it as it goes; `nimbus device status` and apps read it.
package actor SyncActivity {
    package enum Work: String, Codable, Sendable {
        case upload, download, moveOnServer, moveOnDisk, deleteOnServer, deleteOnDisk
    }

    /// Bytes moved of an item's transfer.
    package struct Progress: Sendable {
        var done: Int64
        var total: Int64
    }

    private(set) var pending: [ItemID: Work] = [:]
    private(set) var transfers: [ItemID: Progress] = [:]
    private(set) var refusals: [ItemID: NimbusError] = [:]
    private(set) var roundError: NimbusError?
    private(set) var lastRoundEnded: Date?

    /// Told of the items whose work, transfer or refusal changed (apps' metadata queries follow them).
    private var observer: (@Sendable (Set<ItemID>) -> Void)?

    package init() {}

    func observe(_ observer: @escaping @Sendable (Set<ItemID>) -> Void) { self.observer = observer }

    /// A round scanned the disk and planned: what is left to do.
    func planned(_ steps: [SyncOperation]) {
        let before = pending
        pending = [:]
        for step in steps { if let work = Work(step.action) { pending[step.item] = work } }
        notify(Set(before.keys).symmetricDifference(pending.keys).union(pending.keys.filter { before[$0] != pending[$0] }))
    }

    func started(_ id: ItemID, bytes: Int64) {
        transfers[id] = Progress(done: 0, total: bytes)
        notify([id])
    }

    func moved(_ id: ItemID, bytes: Int64) {
        transfers[id]?.done += bytes
        notify([id])
    }

    func finished(_ id: ItemID) {
        transfers[id] = nil
        pending[id] = nil
        refusals[id] = nil
        notify([id])
    }

    func refused(_ id: ItemID, _ error: NimbusError) {
        transfers[id] = nil
        refusals[id] = error
        notify([id])
    }

    func roundEnded(_ error: NimbusError?) {
        // What waits now waits for another reason (or none): apps' queries show it.
        let waiting = roundError?.reason != error?.reason ? Set(pending.keys) : []
        roundError = error
        let moving = Set(transfers.keys)
        transfers = [:]
        if error == nil { lastRoundEnded = Date() }
        notify(moving.union(waiting))
    }

    private func notify(_ ids: Set<ItemID>) {
        if !ids.isEmpty { observer?(ids) }
    }

    /// Where an item's sync stands, for apps' metadata queries.
    struct ItemFacts: Sendable {
        var work: Work?
        var progress: Progress?
        /// Why the server refused the item's last change.
        var refusal: NimbusError?
        /// Why the last round failed, while the item still waits for its work.
        var waiting: NimbusError?
    }

    /// Where each of `ids` that has something left to do, or was refused, stands.
    func facts(_ ids: some Sequence<ItemID>) -> [ItemID: ItemFacts] {
        var facts: [ItemID: ItemFacts] = [:]
        for id in ids where pending[id] != nil || transfers[id] != nil || refusals[id] != nil {
            facts[id] = ItemFacts(
                work: pending[id], progress: transfers[id], refusal: refusals[id],
                waiting: pending[id] == nil ? nil : roundError)
        }
        return facts
    }

    /// Where every item that has something left to do, or was refused, stands: few items as a rule, so a query
    /// over 100,000 takes these rather than asking of each.
    func allFacts() -> [ItemID: ItemFacts] {
        facts(Set(pending.keys).union(transfers.keys).union(refusals.keys))
    }

    func work(of id: ItemID) -> Work? { pending[id] }
    func transfer(of id: ItemID) -> Progress? { transfers[id] }
    func refusal(of id: ItemID) -> NimbusError? { refusals[id] }
    func summary() -> (pending: Int, refused: Int, error: NimbusError?, lastRoundEnded: Date?) {
        (pending.count, refusals.count, roundError, lastRoundEnded)
    }
}

extension SyncActivity.Work {
    init?(_ action: SyncOperation.Action) {
        switch action {
        case .upload: self = .upload
        case .download: self = .download
        case .moveRemote: self = .moveOnServer
        case .moveLocal: self = .moveOnDisk
        case .deleteRemote: self = .deleteOnServer
        case .deleteLocal: self = .deleteOnDisk
        case .record: return nil
        }
    }
}
