import BenchmarkSupport
import Foundation
import NimbusCore
import NimbusDevice

/// `docs scan`: what every sync round pays before it plans, a scan of a folder whose files are all unchanged
/// (each known to the journal, so none is hashed), beside its floor measured in the same run: listing every
/// folder and `lstat`-ing every entry by its name in its folder, which the scan cannot do without.
enum ScanBenchmark {
    /// Medians of the runs.
    struct Figures {
        let scan: Duration
        let floor: Duration
    }

    static func run(files: Int, runs: Int = 5) throws -> Figures {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-scan-\(UUIDString.random())")
        defer { try? FileManager.default.removeItem(at: folder) }
        // As the peers' folders hold them: a thousand files to a folder.
        for index in 0..<files {
            let file = folder.appendingPathComponent("f\(index / 1000)/file-\(index).bin")
            if index % 1000 == 0 {
                try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            }
            // Not `createFile`, which syncs each file: the setup would take minutes.
            try Data(repeating: UInt8(truncatingIfNeeded: index), count: 1024).write(to: file)
        }
        let scanner = LocalScanner(folder: folder)
        let first = try scanner.scan(known: [])
        let known = (0..<first.count).map(first.file(at:))
        var scans: [Duration] = []
        var floors: [Duration] = []
        for _ in 0..<runs {
            let clock = ContinuousClock()
            floors.append(try clock.measure { _ = try listAndStat(folder.path) })
            scans.append(try clock.measure { _ = try scanner.scan(known: known) })
        }
        return Figures(scan: scans.sorted()[runs / 2], floor: floors.sorted()[runs / 2])
    }

    /// Every entry below `path` listed and `lstat`-ed in its folder, folders recursed into: the system calls a
    /// scan makes.
    private static func listAndStat(_ path: String) throws -> Int {
        guard let directory = opendir(path) else { throw BenchmarkError("cannot list \(path)") }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name != ".", name != ".." else { continue }
            let child = path + "/" + name
            var status = stat()
            guard fstatat(dirfd(directory), name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            count += 1
            if status.st_mode & S_IFMT == S_IFDIR { count += try listAndStat(child) }
        }
        return count
    }
}
