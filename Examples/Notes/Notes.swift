import Foundation
import NimbusKit

/// The iCloud notes tutorial as a program: each note is a `Document` holding text in the container's
/// `Documents` folder, kept in sync by the device daemon at `--root` (`nimbus device run --root DIR`). Two
/// copies with two roots act as two devices.
///
///     swift run Notes --root ~/Phone new Shopping "milk"
///     swift run Notes --root ~/Laptop watch Shopping        # prints the text each time it changes
///     swift run Notes --root ~/Phone edit Shopping "milk, eggs"
///     swift run Notes --root ~/Laptop show Shopping         # text and state (normal, inConflict, …)
///     swift run Notes --root ~/Laptop conflicts Shopping    # the versions in conflict
///     swift run Notes --root ~/Laptop keep Shopping VERSION # keep one (or `current`); resolved everywhere
@main
enum Notes {
    static func main() async {
        do {
            try await run(Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("Notes: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ arguments: [String]) async throws {
        guard arguments.count >= 3, arguments[0] == "--root" else { throw UsageError() }
        let device = UbiquityDevice(root: URL(fileURLWithPath: arguments[1]))
        let command = arguments[2]
        let rest = Array(arguments.dropFirst(3))
        guard let container = await device.ubiquityContainerURL(forIdentifier: nil) else {
            throw NimbusError(.networkUnavailable, "no container: is `nimbus device run --root \(arguments[1])` running?")
        }
        let documents = container.appendingPathComponent("Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        func note(_ name: String) -> Note { Note(fileURL: documents.appendingPathComponent(name + ".note"), device: device) }

        switch (command, rest.count) {
        case ("list", 0):
            let query = MetadataQuery(device: device)
            query.predicate = try MetadataPredicate("%K LIKE '*.note'", [.string(MetadataItem.Key.fsName)])
            query.sortDescriptors = [MetadataQuery.SortDescriptor(key: MetadataItem.Key.fsName)]
            try await query.start()
            for item in query.results {
                let conflict = item.hasUnresolvedConflicts ? "  (in conflict)" : ""
                print("\(item.url.deletingPathExtension().lastPathComponent)\t\(item.downloadingStatus)\(conflict)")
            }
            query.stop()
        case ("new", 2):
            let new = note(rest[0])
            new.text = rest[1]
            try await new.save(to: new.fileURL, for: .forCreating)
            print("saved \(rest[0])")
        case ("show", 1):
            let shown = note(rest[0])
            try await shown.open()
            print("\(shown.text)\n[\(shown.documentState)]")
            try await shown.close()
        case ("edit", 2):
            let edited = note(rest[0])
            try await edited.open()
            edited.text = rest[1]
            edited.updateChangeCount(.done)
            try await edited.close()  // saves what is unsaved
            print("saved \(rest[0])")
        case ("watch", 1):
            let watched = note(rest[0])
            try await watched.open()
            print("\(watched.text) [\(watched.documentState)]")
            fflush(nil)
            for await state in watched.stateChanges where !state.contains(.editingDisabled) {
                print("\(watched.text) [\(state)]")
                fflush(nil)  // also into a pipe, as it happens
            }
        case ("conflicts", 1):
            let url = note(rest[0]).fileURL
            if let current = try await FileVersion.currentVersionOfItem(at: url) {
                print("current\t\(current.persistentIdentifier)\t\(current.originatingDevice)\t\(current.modificationDate)")
            }
            for version in try await FileVersion.unresolvedConflictVersionsOfItem(at: url) {
                print("conflict\t\(version.persistentIdentifier)\t\(version.originatingDevice)\t\(version.modificationDate)")
            }
        case ("keep", 2):
            let url = note(rest[0]).fileURL
            let conflicts = try await FileVersion.unresolvedConflictVersionsOfItem(at: url)
            if rest[1] != "current" {
                guard let kept = conflicts.first(where: { $0.persistentIdentifier == rest[1] }) else {
                    throw NimbusError.notFound("\(rest[0]) has no conflict version \(rest[1])")
                }
                try await kept.replaceItem(at: url)
            }
            try await FileVersion.removeOtherVersionsOfItem(at: url)
            print("kept \(rest[1]); \(conflicts.count) conflict version\(conflicts.count == 1 ? "" : "s") resolved")
        default:
            throw UsageError()
        }
    }

    struct UsageError: Error, CustomStringConvertible {
        var description: String {
            "usage: Notes --root DIR (list | new NAME TEXT | show NAME | edit NAME TEXT | watch NAME | conflicts NAME"
                + " | keep NAME VERSION|current)"
        }
    }
}

/// A note: a document holding text.
final class Note: Document, @unchecked Sendable {
    private let lock = NSLock()
    private var _text = ""

    var text: String {
        get { lock.withLock { _text } }
        set { lock.withLock { _text = newValue } }
    }

    override func contents(forType typeName: String?) throws -> DocumentWrapper { .regularFile(Data(text.utf8)) }

    override func load(fromContents contents: DocumentWrapper, ofType typeName: String?) throws {
        text = String(decoding: contents.regularFileContents ?? Data(), as: UTF8.self)
    }
}
