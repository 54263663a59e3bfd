/// One step that brings the remote and local trees closer, and what the synced tree learns once the
/// step has succeeded.
public struct SyncOperation: Hashable, Sendable, CustomStringConvertible {
    public enum Action: Hashable, Sendable {
        /// Commit the local item (its place, kind and content) on the server, based on the version
        /// whose content hash is `base` (`nil`: an item the server has not seen from this device). On a
        /// base that is no longer current the server keeps both versions.
        case upload(SyncItem, base: String?)
        case moveRemote(to: Place)
        /// Delete the item on the server unless its content is no longer `base` (an edit this device
        /// has not seen wins over the delete).
        case deleteRemote(base: String?)
        /// Write the remote item's content (or folder) at its place, through a temporary file and a
        /// rename.
        case download(SyncItem)
        case moveLocal(to: Place)
        /// Remove the item from the disk (a folder only once it is empty).
        case deleteLocal
        /// Both sides already agree: only the synced tree changes.
        case record
    }

    public let item: ItemID
    public let action: Action
    /// What the synced tree holds for the item once the action has succeeded (`nil`: nothing).
    public let synced: SyncItem?

    public init(_ item: ItemID, _ action: Action, synced: SyncItem?) {
        self.item = item
        self.action = action
        self.synced = synced
    }

    public var description: String { "\(item): \(action)" }

    /// An upload of the content `hash` rather than the content it was planned with (a large file read while it
    /// grew, confirmed once read: `LargeUpload.Stored.confirmed`), which the synced tree learns instead.
    func uploading(content hash: String) -> SyncOperation {
        guard case .upload(var uploaded, let base) = action, uploaded.content != hash else { return self }
        uploaded.content = hash
        var synced = synced
        synced?.content = hash
        return SyncOperation(item, .upload(uploaded, base: base), synced: synced)
    }

    var isDeletion: Bool {
        switch action {
        case .deleteLocal, .deleteRemote: true
        default: false
        }
    }

    /// Where the item is on the disk once the action has run (`nil`: not there).
    func localPlace(before: SyncItem?) -> Place? {
        switch action {
        case .download(let item): item.place
        case .moveLocal(let place): place
        case .deleteLocal: nil
        case .upload, .moveRemote, .deleteRemote, .record: before?.place
        }
    }

    /// Where the item is on the server once the action has run (`nil`: not there).
    func remotePlace(before: SyncItem?) -> Place? {
        switch action {
        case .upload(let item, _): item.place
        case .moveRemote(let place): place
        case .deleteRemote: nil
        case .download, .moveLocal, .deleteLocal, .record: before?.place
        }
    }
}
