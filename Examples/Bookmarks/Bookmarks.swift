import Foundation
import NimbusKit

/// The iCloud bookmarks tutorial as a program: one small document per bookmark in the container's
/// `Documents/Bookmarks` folder, listed live by a `MetadataQuery`, kept in sync by the device daemon at
/// `--root` (`nimbus device run --root DIR`). Two copies with two roots act as two devices.
///
///     swift run Bookmarks --root ~/Phone add Swift https://swift.org
///     swift run Bookmarks --root ~/Laptop watch      # the list, again after each change
///     swift run Bookmarks --root ~/Laptop list
///     swift run Bookmarks --root ~/Phone delete Swift
@main
enum Bookmarks {
    static func main() async {
        do {
            try await run(Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("Bookmarks: \(error)\n".utf8))
            exit(1)
        }
    }

    struct Bookmark: Codable {
        var title: String
        var url: String
    }

    static func run(_ arguments: [String]) async throws {
        guard arguments.count >= 3, arguments[0] == "--root" else { throw UsageError() }
        let device = UbiquityDevice(root: URL(fileURLWithPath: arguments[1]))
        let rest = Array(arguments.dropFirst(3))
        guard let container = await device.ubiquityContainerURL(forIdentifier: nil) else {
            throw NimbusError(.networkUnavailable, "no container: is `nimbus device run --root \(arguments[1])` running?")
        }
        let folder = container.appendingPathComponent("Documents/Bookmarks")
        let coordinator = FileCoordinator(device: device)

        switch (arguments[2], rest.count) {
        case ("add", 2):
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let data = try JSONEncoder().encode(Bookmark(title: rest[0], url: rest[1]))
            try await coordinator.coordinate(writingItemAt: folder.appendingPathComponent(rest[0] + ".bookmark")) { url in
                try data.write(to: url, options: .atomic)
            }
            print("added \(rest[0])")
        case ("delete", 1):
            let url = folder.appendingPathComponent(rest[0] + ".bookmark")
            try await coordinator.coordinate(writingItemAt: url, options: .forDeleting) { url in
                try FileManager.default.removeItem(at: url)
            }
            print("deleted \(rest[0])")
        case ("list", 0):
            let query = try makeQuery(device)
            try await query.start()
            await printList(query.results, coordinator)
            query.stop()
        case ("watch", 0):
            let query = try makeQuery(device)
            try await query.start()
            for await event in query.events {
                switch event {
                case .gatheringFinished(let items):
                    await printList(items, coordinator)
                case .updated(let added, let changed, let removed):
                    let names = { (items: [MetadataItem]) in items.map { $0.url.deletingPathExtension().lastPathComponent } }
                    print("update: added \(names(added)) changed \(names(changed)) removed \(names(removed))")
                    await printList(query.results, coordinator)
                }
            }
        default:
            throw UsageError()
        }
    }

    static func makeQuery(_ device: UbiquityDevice) throws -> MetadataQuery {
        let query = MetadataQuery(device: device)
        query.predicate = try MetadataPredicate("%K LIKE '*.bookmark'", [.string(MetadataItem.Key.fsName)])
        query.sortDescriptors = [MetadataQuery.SortDescriptor(key: MetadataItem.Key.fsName)]
        return query
    }

    /// Each bookmark's title and address (read through coordination, downloaded first if need be).
    static func printList(_ items: [MetadataItem], _ coordinator: FileCoordinator) async {
        print("\(items.count) bookmark\(items.count == 1 ? "" : "s")")
        for item in items {
            // Another device may delete it meanwhile: list what is readable.
            guard
                let bookmark = try? await coordinator.coordinate(
                    readingItemAt: item.url,
                    { url in
                        try JSONDecoder().decode(Bookmark.self, from: Data(contentsOf: url))
                    })
            else { continue }
            print("  \(bookmark.title)\t\(bookmark.url)")
        }
        fflush(nil)  // also into a pipe, as it happens
    }

    struct UsageError: Error, CustomStringConvertible {
        var description: String { "usage: Bookmarks --root DIR (add TITLE URL | delete TITLE | list | watch)" }
    }
}
