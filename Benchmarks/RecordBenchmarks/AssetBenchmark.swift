import BenchmarkSupport
import Foundation
import NimbusCore
import NimbusKit

extension RecordBenchmarks {
    /// An asset of the largest size the server takes (50 MB) saved with a record and downloaded back
    /// through the SDK, each round a file of its own (a blob is stored once per content), beside the disk's
    /// own synced write rate measured in the same run: an upload ends in a synced write of every byte.
    static func assetRows(_ server: ServerProcess, database: CloudDatabase, into table: inout ResultTable) async throws {
        let size = 50_000_000
        let rounds = 5
        let disk = try DiskRate.ofSyncedWrites(bytes: 64 << 20, in: server.dataDirectory)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nimbus-bench-assets-\(UUIDString.random())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("upload.bin")
        let downloaded = directory.appendingPathComponent("download.bin")
        var bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        var up = [Double]()
        var down = [Double]()
        progress("uploading and downloading \(rounds) assets of 50 MB")
        for round in 0..<rounds {
            withUnsafeBytes(of: UInt64(round)) { bytes.replaceSubrange(0..<8, with: $0) }
            try bytes.write(to: file)
            var photo = Record(recordType: "Photos")
            photo["image"] = Asset(fileURL: file)
            let upStart = ContinuousClock.now
            let saved = try await database.save(photo)
            up.append(Double(size) / ((ContinuousClock.now - upStart).milliseconds / 1000) / 1_048_576)
            let asset: Asset? = saved["image"]
            guard let asset else { throw BenchmarkError("the saved record holds no asset") }
            try? FileManager.default.removeItem(at: downloaded)
            let downStart = ContinuousClock.now
            try await database.download(asset, to: downloaded)
            down.append(Double(size) / ((ContinuousClock.now - downStart).milliseconds / 1000) / 1_048_576)
            guard try Data(contentsOf: downloaded) == bytes else { throw BenchmarkError("the downloaded asset differs") }
        }
        let (upRate, downRate) = (Percentiles(up).at(50), Percentiles(down).at(50))
        table.add(
            "Asset of 50 MB saved with its record (MB/s, median of \(rounds); disk's synced write rate)",
            String(format: "%.0f MB/s (%.0f–%.0f; disk %.0f MB/s)", upRate, up.min()!, up.max()!, disk), target: "(reference)",
            met: true)
        table.add(
            "Asset of 50 MB downloaded (MB/s, median of \(rounds))",
            String(format: "%.0f MB/s (%.0f–%.0f)", downRate, down.min()!, down.max()!), target: "(reference)", met: true)
    }
}
