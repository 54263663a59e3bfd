import ArgumentParser
import Foundation
import NimbusCore
import NimbusKit

struct RecordsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "records", abstract: "Query, save, fetch and delete records of the signed-in user's private database.",
        subcommands: [RecordsQuery.self, RecordsSave.self, RecordsGet.self, RecordsDelete.self])
}

struct ZonesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zones", abstract: "List, create and delete zones of the signed-in user's private database.",
        subcommands: [ZonesList.self, ZonesCreate.self, ZonesDelete.self])
}

/// Options of the record and zone commands: the device, the container and its environment.
struct DatabaseOptions: ParsableArguments {
    @OptionGroup var client: ClientOptions
    @Option(help: "The container, like iCloud.com.example.App (default: the one given at login). [env: NIMBUS_CONTAINER]")
    var container: String?
    @Option(help: "development or production. [env: NIMBUS_ENVIRONMENT]")
    var environment: String = Environment.string("NIMBUS_ENVIRONMENT") ?? "development"

    var database: CloudDatabase {
        get throws {
            let profile = try client.profile()
            guard let apiToken = profile.apiToken else {
                throw CLIError("no API token: pass --api-token to `nimbus login` or set NIMBUS_API_TOKEN")
            }
            guard let identifier = container ?? Environment.string("NIMBUS_CONTAINER") ?? profile.container else {
                throw CLIError("no container: pass --container, or --container to `nimbus login`, or set NIMBUS_CONTAINER")
            }
            guard let environment = CloudContainer.Environment(rawValue: environment) else {
                throw ValidationError("--environment must be development or production")
            }
            return CloudContainer(identifier: identifier, session: profile.session, apiToken: apiToken, environment: environment)
                .privateCloudDatabase
        }
    }

    /// The zone a `--zone` option names (the default zone when omitted).
    static func zoneID(_ zone: String?) -> RecordZoneID { zone.map { RecordZoneID(zoneName: $0) } ?? .default }

    /// Prints records as a table (name, then one column per field) or, with `--json`, as CloudKit JSON.
    func print(_ records: [Record]) {
        if client.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let wire = records.map { record in
                RecordWire(
                    recordName: record.recordID.recordName, recordType: record.recordType,
                    recordChangeTag: record.recordChangeTag,
                    fields: Dictionary(uniqueKeysWithValues: record.allKeys.map { ($0, record[field: $0]!) }))
            }
            Swift.print(String(decoding: (try? encoder.encode(wire)) ?? Data(), as: UTF8.self))
            return
        }
        let fields = Array(Set(records.flatMap(\.allKeys))).sorted()
        Swift.print(
            table(
                ["recordName"] + fields,
                records.map { record in
                    [record.recordID.recordName] + fields.map { record[field: $0].map(FieldText.readable) ?? "" }
                }))
    }
}

struct RecordsQuery: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query", abstract: "Print the records of a type that match a filter.",
        discussion: #"Example: nimbus records query Items --filter 'name BEGINSWITH "a" AND number > 3' --sort name"#)
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The record type.") var recordType: String
    @Option(help: "An NSPredicate-format filter.") var filter: String = "TRUEPREDICATE"
    @Option(help: "Sort by this field; `field:desc` for descending. Repeatable.") var sort: [String] = []
    @Option(help: "The zone (default: _defaultZone).") var zone: String?

    func run() async throws {
        do {
            var query = try Query(recordType: recordType, predicate: filter)
            query.sortDescriptors = sort.map { key in
                key.hasSuffix(":desc") ? .init(key: String(key.dropLast(5)), ascending: false) : .init(key: key)
            }
            let records = try await options.database.allRecords(matching: query, inZoneWith: DatabaseOptions.zoneID(zone))
            options.print(records)
        } catch let error as NimbusCore.Predicate.ParseError {
            fail(CLIError("--filter \(filter)\n        \(String(repeating: " ", count: error.position + 2))^ \(error.message)"))
        } catch {
            fail(error)
        }
    }
}

struct RecordsSave: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "save", abstract: "Create a record, or set fields of an existing one (others are kept).",
        discussion: """
            Example: nimbus records save Items --name milk --field name=milk --field number=2 --field list:REFERENCE/DELETE_SELF=groceries

            Types are inferred (text, integers, decimals) or given as name:TYPE=value, with TYPE one of STRING, INT64, DOUBLE, TIMESTAMP, BYTES, LOCATION, REFERENCE (or REFERENCE/DELETE_SELF, REFERENCE/VALIDATE), or TYPE_LIST with comma-separated values.
            """)
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The record type.") var recordType: String
    @Option(help: "The record name (generated when omitted).") var name: String?
    @Option(help: "name=value or name:TYPE=value. Repeatable.") var field: [String] = []
    @Option(help: "The zone (default: _defaultZone).") var zone: String?

    func run() async throws {
        do {
            let zoneID = DatabaseOptions.zoneID(zone)
            var record = Record(recordType: recordType, recordID: RecordID(recordName: name ?? UUID().uuidString, zoneID: zoneID))
            for assignment in field {
                let (key, value) = try FieldText.parse(assignment)
                record[field: key] = value
            }
            let (saved, _) = try await options.database.modifyRecords(saving: [record], deleting: [], savePolicy: .changedKeys)
            options.print([try saved[record.recordID]!.get()])
        } catch {
            fail(error)
        }
    }
}

struct RecordsGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Print one record.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The record name.") var name: String
    @Option(help: "The zone (default: _defaultZone).") var zone: String?

    func run() async throws {
        do {
            let id = RecordID(recordName: name, zoneID: DatabaseOptions.zoneID(zone))
            options.print([try await options.database.record(for: id)])
        } catch {
            fail(error)
        }
    }
}

struct RecordsDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a record (and the records that reference it with DELETE_SELF).")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The record name.") var name: String
    @Option(help: "The zone (default: _defaultZone).") var zone: String?

    func run() async throws {
        do {
            let id = RecordID(recordName: name, zoneID: DatabaseOptions.zoneID(zone))
            try await options.database.deleteRecord(withID: id)
            print(options.client.json ? ValueText.json(["deleted": true]) : "Deleted \(name).")
        } catch {
            fail(error)
        }
    }
}

struct ZonesList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Print the zones.")
    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        do {
            let names = try await options.database.allRecordZones().map(\.zoneID.zoneName)
            print(
                options.client.json ? ValueText.json(names) : names.joined(separator: "\n")
            )
        } catch {
            fail(error)
        }
    }
}

struct ZonesCreate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create a zone (atomic commits, change tracking).")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The zone name.") var name: String

    func run() async throws {
        do {
            _ = try await options.database.save(RecordZone(zoneName: name))
            print(options.client.json ? ValueText.json(["zoneName": name]) : "Created zone \(name).")
        } catch {
            fail(error)
        }
    }
}

struct ZonesDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a zone and every record in it.")
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The zone name.") var name: String

    func run() async throws {
        do {
            try await options.database.deleteRecordZone(withID: RecordZoneID(zoneName: name))
            print(options.client.json ? ValueText.json(["deleted": true]) : "Deleted zone \(name).")
        } catch {
            fail(error)
        }
    }
}
