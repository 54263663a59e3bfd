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
        progress("uploading and downloading \(rounds) assets of 50 MB")
        let (up, down) = try await Transfers.assetRates(database, size: size, rounds: rounds)
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
