import Foundation

/// A progress line for a transfer over 1 MB — bytes, rate, time left — redrawn on standard error when it
/// is a terminal, at most ten times a second; nothing when it is piped, so scripts read clean output.
final class TransferProgress {
    private let label: String
    private let total: Int64
    private let shown: Bool
    private let start = ContinuousClock.now
    private var done: Int64 = 0
    private var drawn = ContinuousClock.now - .seconds(1)

    init(_ label: String, total: Int64, terminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.label = label
        self.total = total
        shown = terminal && total > 1_000_000
    }

    func add(_ bytes: Int) {
        done += Int64(bytes)
        guard shown, ContinuousClock.now - drawn >= .milliseconds(100) || done >= total else { return }
        drawn = ContinuousClock.now
        FileHandle.standardError.write(Data(("\r" + Self.line(label, done: done, total: total, elapsed: drawn - start)).utf8))
    }

    func finish() {
        if shown { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func line(_ label: String, done: Int64, total: Int64, elapsed: Duration) -> String {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let left = rate > 0 ? Int((Double(total - done) / rate).rounded(.up)) : nil
        let width = 20
        let filled = total > 0 ? Int(Double(width) * Double(done) / Double(total)) : width
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        return String(
            format: "%@ [%@] %.1f / %.1f MB  %.1f MB/s  %@", label, bar, Double(done) / 1e6, Double(total) / 1e6, rate / 1e6,
            left.map { "\($0) s left" } ?? "")
    }
}
