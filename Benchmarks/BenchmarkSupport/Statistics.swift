import Foundation

/// Percentiles of a set of measurements, in the measurements' unit.
package struct Percentiles {
    package let sorted: [Double]

    package init(_ values: [Double]) { sorted = values.sorted() }

    package func at(_ percentile: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let index = Int((percentile / 100 * Double(sorted.count - 1)).rounded())
        return sorted[min(sorted.count - 1, max(0, index))]
    }
}

/// A printed result table: what was measured, the figure, the target, and whether it was met.
package struct ResultTable {
    package init() {}

    private var rows: [(String, String, String, String)] = []

    package mutating func add(_ name: String, _ value: String, target: String, met: Bool) {
        rows.append((name, value, target, met ? "yes" : "NO"))
    }

    package func render() -> String {
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

package struct Summary: Sendable {
    package var median: Double
    package var low: Double
    package var high: Double
    package var text: String { String(format: "%.0f (%.0f–%.0f)", median, low, high) }
}

/// Runs a measurement several times: the median, with the range.
@MainActor
package func median(runs: Int, _ measure: () async throws -> Double) async throws -> Summary {
    var values = [Double]()
    for _ in 0..<runs { values.append(try await measure()) }
    values.sort()
    return Summary(median: values[values.count / 2], low: values.first!, high: values.last!)
}

extension Duration {
    package var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
