import Foundation

/// A line chart the server draws as SVG from its own figures: no script and no style, only attributes
/// (the page's Content-Security-Policy allows neither inline script nor inline style). Colours come
/// from the stylesheet through class names, so both themes apply.
struct SVGChart: Sendable {
    struct Series: Sendable {
        var name: String
        /// One value a step; nil where there is none (a minute without requests has no latency).
        var values: [Double?]
        /// Which of the stylesheet's series colours (`series-0`, `series-1`, …).
        var style: Int
    }

    var title: String
    var unit: String
    var series: [Series]
    var width = 640.0
    var height = 180.0
    var firstLabel = "60 min ago"
    var lastLabel = "now"

    /// The chart's SVG; every text in it is escaped.
    var svg: String {
        let left = 48.0, right = 8.0, top = 10.0, bottom = 22.0
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let highest = series.flatMap { $0.values.compactMap { $0 } }.max() ?? 0
        let ceiling = highest > 0 ? Self.roundUp(highest) : 1
        let steps = max(1, (series.map(\.values.count).max() ?? 1) - 1)
        var parts = [
            #"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \#(Int(width)) \#(Int(height))" class="chart" role="img" aria-label="\#(WebSignInPage.escape(description))">"#,
            "<title>\(WebSignInPage.escape(description))</title>",
            #"<line class="axis" x1="\#(left)" y1="\#(top + plotHeight)" x2="\#(width - right)" y2="\#(top + plotHeight)"/>"#,
            #"<line class="grid" x1="\#(left)" y1="\#(top)" x2="\#(width - right)" y2="\#(top)"/>"#,
            #"<text class="label" x="\#(left - 4)" y="\#(top + 4)" text-anchor="end">\#(WebSignInPage.escape(Self.format(ceiling)))</text>"#,
            #"<text class="label" x="\#(left - 4)" y="\#(top + plotHeight)" text-anchor="end">0</text>"#,
            #"<text class="label" x="\#(left)" y="\#(height - 6)">\#(WebSignInPage.escape(firstLabel))</text>"#,
            #"<text class="label" x="\#(width - right)" y="\#(height - 6)" text-anchor="end">\#(WebSignInPage.escape(lastLabel))</text>"#,
        ]
        for line in series {
            // A gap where there is no value: the line is drawn in runs.
            var runs = [[String]]()
            var run = [String]()
            for (step, value) in line.values.enumerated() {
                guard let value else {
                    if !run.isEmpty { runs.append(run) }
                    run = []
                    continue
                }
                let x = left + plotWidth * Double(step) / Double(steps)
                let y = top + plotHeight * (1 - min(value, ceiling) / ceiling)
                run.append(String(format: "%.1f,%.1f", x, y))
            }
            if !run.isEmpty { runs.append(run) }
            for points in runs {
                parts.append(#"<polyline class="series series-\#(line.style)" points="\#(points.joined(separator: " "))"/>"#)
            }
        }
        parts.append("</svg>")
        return parts.joined()
    }

    private var description: String {
        "\(title) over the last hour, in \(unit): "
            + series.map { "\($0.name) up to \(Self.format($0.values.compactMap { $0 }.max() ?? 0))" }
            .joined(separator: ", ")
    }

    /// 1, 2 or 5 times a power of ten, at least `value`: a round top for the axis.
    static func roundUp(_ value: Double) -> Double {
        let power = pow(10, floor(log10(value)))
        return [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= value } ?? value
    }

    static func format(_ value: Double) -> String {
        value.isInfinite ? "∞" : value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}
