import BenchmarkSupport
import Foundation
import NimbusCore
import NimbusKit
import NimbusStore
import NimbusTestingCore

extension ScaleOutBenchmarks {
    /// `nimbus backup --database` and `nimbus restore --database` of a node on PostgreSQL whose blobs are in
    /// SeaweedFS (100,000 records and 10 assets of 50 MB), run as an operator runs them, beside what the
    /// same work takes with the tools alone in the same run: `pg_dump` of the database plus GETs of every
    /// blob object (as the backup reads them, eight at a time), and `pg_restore` plus the store's PUT rate.
    static func backupRows(cluster: TemporaryPostgres, nimbus: URL, into table: inout ResultTable) async throws {
        let objects = try await TemporarySeaweedFS.start()
        defer { objects.stop() }
        let bucket = try await nodeBucket(objects)
        let bucketOptions = bucketArguments(objects)
        let database = try await cluster.database()
        let node = try await ServerProcess(
            nimbus: nimbus, port: port(), extraArguments: limits + ["--blobs", "s3://nimbus/node/"] + bucketOptions,
            database: database)
        defer { node.stop() }
        let session = try await node.signIn("backup@bench.local", device: "bench")
        let records = CloudContainer(identifier: node.container, session: session, apiToken: node.apiToken)
            .privateCloudDatabase
        let zone = try await records.save(RecordZone(zoneName: "Backed")).zoneID
        progress("seeding 100,000 records and 10 assets of 50 MB")
        try await seed(records, zone: zone, count: 100_000)
        let assets = 10
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-\(UUIDString.random()).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        var bytes = Data((0..<50_000_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        for number in 0..<assets {
            // Each file differs (its first bytes), so each is a blob of its own.
            withUnsafeBytes(of: UInt64(number)) { bytes.replaceSubrange(0..<8, with: $0) }
            try bytes.write(to: file)
            var photo = Record(recordType: "Photos", zoneID: zone)
            photo["image"] = Asset(fileURL: file)
            _ = try await records.save(photo)
        }

        let destination = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nimbus-bench-backups-\(UUIDString.random())")
        defer { try? FileManager.default.removeItem(at: destination) }
        progress("measuring a backup")
        let backup = try await timed(
            nimbus,
            ["backup", "--database", database, "--data", node.dataDirectory.path, "--blobs", "s3://nimbus/node/"]
                + bucketOptions + ["--to", destination.path])
        progress("measuring pg_dump and GETs of the blobs alone")
        let dump = "/tmp/nimbus-bench-\(UUIDString.random()).dump"
        defer { unlink(dump) }
        let name = URL(string: database)!.lastPathComponent
        let connection = ["-h", "127.0.0.1", "-p", "\(cluster.port)", "-U", "nimbus"]
        let dumped = try await timed {
            _ = try cluster.run("pg_dump", ["--format=custom", "--file=\(dump)"] + connection + [name])
        }
        let (blobBytes, fetched) = try await getEveryObject(bucket)
        let floor = try await rawObjectStoreRates(bucket, bytes: 64 << 20, rounds: 3)
        progress("measuring a second backup and a restore")
        _ = try await records.save(Record(recordType: "Notes", zoneID: zone))
        let second = try await timed(
            nimbus,
            ["backup", "--database", database, "--data", node.dataDirectory.path, "--blobs", "s3://nimbus/node/"]
                + bucketOptions + ["--to", destination.path])
        let target = try await cluster.database()
        let restoredData = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nimbus-bench-restored-\(UUIDString.random())")
        defer { try? FileManager.default.removeItem(at: restoredData) }
        let restore = try await timed(
            nimbus,
            ["restore", "--from", destination.path, "--database", target, "--data", restoredData.path, "--blobs"]
                + ["s3://nimbus/restored/"] + bucketOptions)
        let bare = try await cluster.database()
        let restored = try await timed {
            _ = try cluster.run(
                "pg_restore",
                ["--single-transaction", "--no-owner", "--dbname=\(URL(string: bare)!.lastPathComponent)"]
                    + connection + [dump])
        }
        let dumpBytes = (try? FileManager.default.attributesOfItem(atPath: dump)[.size] as? Int) ?? 0

        let megabytes = Double(blobBytes) / 1_048_576
        table.add(
            "PostgreSQL + SeaweedFS: nimbus backup of 100,000 records (a \(dumpBytes / 1_000_000) MB dump) + \(assets) × 50 MB blobs",
            String(format: "%.1f s", backup), target: "(reference)", met: true)
        table.add(
            "Floor: pg_dump alone + GET of every blob (8 at a time)",
            String(format: "%.1f s + %.1f s = %.1f s (%.0f MB/s)", dumped, fetched, dumped + fetched, megabytes / fetched),
            target: "(reference)", met: true)
        table.add(
            "Second backup into the same destination (new blobs only)", String(format: "%.1f s", second),
            target: "(reference)", met: true)
        table.add(
            "nimbus restore into an empty database and a new prefix", String(format: "%.1f s", restore), target: "(reference)",
            met: true)
        table.add(
            "Floor: pg_restore alone + the blobs at the store's PUT rate (64 MiB in 8 MiB parts)",
            String(format: "%.1f s + %.1f s = %.1f s", restored, megabytes / floor.put, restored + megabytes / floor.put),
            target: "(reference)", met: true)
    }

    /// Saves `count` small records in batches of 200, four batches at a time.
    static func seed(_ database: CloudDatabase, zone: RecordZoneID, count: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (number, start) in stride(from: 0, to: count, by: 200).enumerated() {
                if number >= 4 { try await group.next() }
                group.addTask {
                    let batch = (start..<min(start + 200, count)).map { index in
                        var note = Record(recordType: "Notes", zoneID: zone)
                        note["title"] = "note \(index)"
                        note["rank"] = index
                        return note
                    }
                    let (saved, _) = try await database.modifyRecords(saving: batch, deleting: [], savePolicy: .allKeys)
                    for result in saved.values { _ = try result.get() }
                }
            }
            try await group.waitForAll()
        }
    }

    /// GETs every object under the bucket's prefix, eight at a time, dropping the bytes; their total size and
    /// the seconds it took.
    static func getEveryObject(_ bucket: S3Client.Location) async throws -> (bytes: Int, seconds: Double) {
        let client = S3Client(bucket)
        var keys = [String]()
        var continuation: String?
        repeat {
            let page = try await client.list(continuation: continuation)
            keys += page.objects.map(\.key).filter { !$0.hasPrefix("retained/") }
            continuation = page.next
        } while continuation != nil
        let start = ContinuousClock.now
        var total = 0
        for first in stride(from: 0, to: keys.count, by: 8) {
            total += try await withThrowingTaskGroup(of: Int.self) { group in
                for key in keys[first..<min(first + 8, keys.count)] {
                    group.addTask {
                        var received = 0
                        try await client.get(key) { received += $0.readableBytes }
                        return received
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        return (total, (ContinuousClock.now - start).milliseconds / 1000)
    }

    /// Seconds `nimbus` with `arguments` takes to its end; throws unless it exits 0.
    static func timed(_ nimbus: URL, _ arguments: [String]) async throws -> Double {
        try await timed { _ = try ChildProgram.run(nimbus.path, arguments) }
    }

    /// Seconds `work` (which blocks its thread) takes, on a Dispatch thread rather than a cooperative one.
    static func timed(_ work: @escaping @Sendable () throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
        return (ContinuousClock.now - start).milliseconds / 1000
    }
}
