/// Percentiles of a set of measurements, in the measurements' unit.
struct Percentiles {
    let sorted: [Double]

    init(_ values: [Double]) { sorted = values.sorted() }

    func at(_ percentile: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let index = Int((percentile / 100 * Double(sorted.count - 1)).rounded())
        return sorted[min(sorted.count - 1, max(0, index))]
    }
}

/// A printed result table: what was measured, the figure, the target, and whether it was met.
struct ResultTable {
    private var rows: [(String, String, String, String)] = []

    mutating func add(_ name: String, _ value: String, target: String, met: Bool) {
        rows.append((name, value, target, met ? "yes" : "NO"))
    }

    func render() -> String {
        let header = ("Benchmark", "Measured", "Target", "Met")
        let all = [header] + rows
        let widths = [all.map(\.0.count).max()!, all.map(\.1.count).max()!, all.map(\.2.count).max()!, all.map(\.3.count).max()!]
        func line(_ row: (String, String, String, String)) -> String {
            "| "
                + [row.0, row.1, row.2, row.3].enumerated().map {
                    $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0)
                }
                .joined(separator: " | ") + " |"
        }
        let separator = "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|"
        return ([line(header), separator] + rows.map(line)).joined(separator: "\n")
    }
}
