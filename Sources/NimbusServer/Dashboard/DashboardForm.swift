import Foundation

/// The fields of an `application/x-www-form-urlencoded` body or a query string; a name may repeat (a
/// list of checkboxes), and `value(_:)` is its first value.
struct DashboardForm: Sendable {
    private(set) var fields: [(name: String, value: String)] = []

    init(encoded text: Substring) {
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            guard let name = parts.first, !name.isEmpty else { continue }
            fields.append((name, parts.count > 1 ? parts[1] : ""))
        }
    }

    init(encoded text: String) { self.init(encoded: text[...]) }

    func value(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// The value with surrounding spaces removed; nil when absent or blank.
    func trimmed(_ name: String) -> String? {
        guard let value = value(name)?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else { return nil }
        return value
    }

    func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    func isChecked(_ name: String) -> Bool { value(name) != nil }
}
