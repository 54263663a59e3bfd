import BenchmarkSupport
import Foundation
import NimbusCore
import NimbusKit

extension RecordBenchmarks {
    /// `nimbus backup` of a data directory holding 1,000,000 records and 2 GB of asset blobs, run by the
    /// command line beside the serving process as an operator would: its time beside the time a plain copy
    /// of the same files takes (`cp` and `sync`), and `/health` and key-value write p99 during it beside
    /// idle rounds and the disk's own synced-write p99. Then a second backup into the same destination,
    /// which copies only the blobs that are new.
    @MainActor
    static func backupRows(_ server: ServerProcess, nimbus: URL, database: CloudDatabase, into table: inout ResultTable)
        async throws
    {
        let zone = try await database.save(RecordZone(zoneName: "Backed")).zoneID
        progress("seeding 1,000,000 records")
        try await seed(database, zone: zone, range: 0..<1_000_000)
        let assets = 40
        progress("uploading \(assets) assets of 50 MB")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-\(UUIDString.random()).bin")
        var bytes = Data((0..<50_000_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        defer { try? FileManager.default.removeItem(at: file) }
        for number in 0..<assets {
            // Each file differs (its first bytes), so each is a blob of its own.
            withUnsafeBytes(of: UInt64(number)) { bytes.replaceSubrange(0..<8, with: $0) }
            try bytes.write(to: file)
            var photo = Record(recordType: "Photos", zoneID: zone)
            photo["image"] = Asset(fileURL: file)
            _ = try await database.save(photo)
        }
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nimbus-bench-backups-\(UUIDString.random())")
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-copy-\(UUIDString.random())")
        defer {
            try? FileManager.default.removeItem(at: destination)
            try? FileManager.default.removeItem(at: copy)
        }
        let probe = try await ResponsivenessProbe(server, user: "probe@bench.local")
        var idle = try await probe.measure(rounds: 1000)
        progress("measuring a backup")
        let data = server.dataDirectory
        let (during, took) = try await probe.measure {
            try await run(nimbus, ["backup", "--data", data.path, "--to", destination.path])
        }
        idle += try await probe.measure(rounds: 1000)
        progress("measuring a plain copy of the same files")
        let copyStart = ContinuousClock.now
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        try await run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "cp -r \"$0/blobs\" \"$0/nimbus.sqlite\" \"$1\" && sync", data.path, copy.path])
        let copied = ContinuousClock.now - copyStart
        progress("measuring a second backup")
        _ = try await database.save(item(2_000_000, zone: zone))
        let secondStart = ContinuousClock.now
        try await run(nimbus, ["backup", "--data", data.path, "--to", destination.path])
        let second = ContinuousClock.now - secondStart

        let backups = try FileManager.default.contentsOfDirectory(atPath: destination.path).filter { $0.hasPrefix("backup-") }
            .sorted()
        let databaseBytes =
            try FileManager.default.attributesOfItem(
                atPath: destination.appendingPathComponent(backups[0]).appendingPathComponent("nimbus.sqlite").path)[.size]
            as? Int ?? 0
        let blobFiles = try FileManager.default.contentsOfDirectory(atPath: destination.appendingPathComponent("blobs").path)
            .count
        table.add(
            "Backup of 1,000,000 records + \(assets) × 50 MB blobs (copied database / blobs)",
            String(format: "%.1f s (%.2f GB / %d files)", took.milliseconds / 1000, Double(databaseBytes) / 1e9, blobFiles),
            target: "(reference)", met: true)
        table.add(
            "Floor: cp of the same files + sync", String(format: "%.1f s", copied.milliseconds / 1000), target: "(reference)",
            met: true)
        table.add(
            "Second backup into the same destination (new blobs only)", String(format: "%.1f s", second.milliseconds / 1000),
            target: "(reference)", met: true)
        table.addResponsiveness(idle: idle, during: during, job: "the backup")
        table.add("Rounds measured during the backup", "\(during.write.count)", target: "(reference)", met: true)
    }

    /// Runs a program to its end without holding a thread; throws unless it exits 0.
    static func run(_ executable: URL, _ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in continuation.resume() }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        guard process.terminationStatus == 0 else {
            throw NimbusError(
                .internalError, "\(executable.lastPathComponent) \(arguments.first ?? "") exited \(process.terminationStatus)")
        }
    }
}
