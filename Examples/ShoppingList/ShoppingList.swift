import Foundation
import NimbusKit

/// The shopping-list app of Nimbus's record database, as a program: lists and items in a zone of the
/// user's private database, items referencing their list with DELETE_SELF.
///
///     swift run ShoppingList --server http://127.0.0.1:8080 --email ann@example.com --password … \
///         --api-token … --container iCloud.com.example.Shopping
@main
enum ShoppingList {
    static func main() async {
        do {
            try await run(try Options(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("ShoppingList: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: Options) async throws {
        let session = try await NimbusAccount.signIn(
            server: options.server, email: options.email, password: options.password, deviceName: "ShoppingList example")
        let database = CloudContainer(identifier: options.container, session: session, apiToken: options.apiToken)
            .privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Shopping")).zoneID

        var list = Record(recordType: "Lists", zoneID: zone)
        list["title"] = "Groceries"
        list = try await database.save(list)
        print("Created list \(list["title"] ?? "") (\(list.recordID.recordName))")

        let items = ["milk", "bread", "apples", "coffee"].map { name in
            var item = Record(recordType: "Items", zoneID: zone)
            item["name"] = name
            item["list"] = Reference(list, action: .deleteSelf)
            return item
        }
        _ = try await database.modifyRecords(saving: items, deleting: [])

        var byName = try Query(recordType: "Items", predicate: "list == %@", list.recordID)
        byName.sortDescriptors = [.init(key: "name")]
        let sorted = try await database.allRecords(matching: byName, inZoneWith: zone)
        print("Items by name: " + sorted.compactMap { $0["name"] as String? }.joined(separator: ", "))

        // A field added later needs no migration: set it on one item and query by it.
        var coffee = try sorted.first { $0["name"] == "coffee" }.unwrapped("coffee")
        coffee["number"] = 2
        coffee = try await database.save(coffee)
        let counted = try await database.allRecords(
            matching: Query(recordType: "Items", predicate: "number >= 2"), inZoneWith: zone)
        print(
            "Items with a number: " + counted.map { "\($0["name"] ?? "") ×\($0["number"] ?? 0 as Int64)" }.joined(separator: ", ")
        )

        try await database.deleteRecord(withID: list.recordID)
        let left = try await database.allRecords(matching: Query(recordType: "Items"), inZoneWith: zone)
        print("Deleted the list; items left: \(left.count)")
        try await database.deleteRecordZone(withID: zone)
    }

    struct Options {
        var server: URL
        var email: String
        var password: String
        var apiToken: String
        var container: String

        init(_ arguments: ArraySlice<String>) throws {
            var values = [String: String]()
            var remaining = arguments.makeIterator()
            while let name = remaining.next() {
                guard name.hasPrefix("--"), let value = remaining.next() else { throw UsageError() }
                values[String(name.dropFirst(2))] = value
            }
            guard let server = values["server"].flatMap(URL.init(string:)), let email = values["email"],
                let password = values["password"], let apiToken = values["api-token"], let container = values["container"]
            else { throw UsageError() }
            (self.server, self.email, self.password, self.apiToken, self.container) = (
                server, email, password, apiToken, container
            )
        }
    }

    struct UsageError: Error, CustomStringConvertible {
        var description: String {
            "usage: ShoppingList --server URL --email EMAIL --password PASSWORD --api-token TOKEN --container iCloud.…"
        }
    }
}

extension Optional {
    func unwrapped(_ what: String) throws -> Wrapped {
        guard let self else { throw NimbusError.notFound("\(what) is missing") }
        return self
    }
}
