import Foundation
import NimbusCore
import NimbusKit

/// Large transfers as users make them, measured the same way wherever the server keeps its blobs.
package enum Transfers {
    /// MB/s (of 2^20 bytes) for each round of an asset of `size` bytes saved with a record and downloaded
    /// back through the SDK, each round a file of its own (a blob is stored once per content).
    package static func assetRates(_ database: CloudDatabase, size: Int = 50_000_000, rounds: Int = 5) async throws
        -> (up: [Double], down: [Double])
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "nimbus-bench-assets-\(UUIDString.random())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("upload.bin")
        let downloaded = directory.appendingPathComponent("download.bin")
        var bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
        withUnsafeBytes(of: UInt64.random(in: 0...UInt64.max)) { bytes.replaceSubrange(8..<16, with: $0) }
        var up = [Double]()
        var down = [Double]()
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
        return (up, down)
    }

    /// Seconds for A's engine to upload a new file of `bytes` random bytes and for B's to download it.
    package static func largeFile(_ pair: DevicePair, bytes: Int) async throws -> (up: Double, down: Double) {
        var generator = SystemRandomNumberGenerator()
        let content = Data((0..<bytes / 8).flatMap { _ in withUnsafeBytes(of: generator.next()) { Array($0) } })
        try pair.a.write("Documents/Large.bin", content)
        let upStart = ContinuousClock.now
        _ = try await pair.a.engine.sync()
        let up = (ContinuousClock.now - upStart).milliseconds / 1000
        let downStart = ContinuousClock.now
        _ = try await pair.b.engine.sync()
        let down = (ContinuousClock.now - downStart).milliseconds / 1000
        guard pair.b.read("Documents/Large.bin") == content else { throw BenchmarkError("B's copy differs") }
        return (up, down)
    }
}
