import Foundation

extension Date {
    /// The times the wire carries, in milliseconds since 1970: JavaScript's date range (±100,000,000 days),
    /// which every CloudKit web client can represent. Values beyond it are refused when decoded.
    package static let wireMilliseconds: ClosedRange<Int64> = -8_640_000_000_000_000...8_640_000_000_000_000

    /// Milliseconds since 1970, as CloudKit's wire format counts time (clamped to `wireMilliseconds`).
    ///
    /// Exact for every date made from milliseconds: `Date` counts seconds from 2001 in a Double, whose
    /// rounding far from then (beyond the year 141,000) can land the product a millisecond off, so the
    /// neighbours of the rounded value are checked too.
    package var milliseconds: Int64 {
        let value = (timeIntervalSince1970 * 1000).rounded()
        guard value.isFinite else { return value < 0 ? Self.wireMilliseconds.lowerBound : Self.wireMilliseconds.upperBound }
        let rounded = Int64(min(max(value, Double(Self.wireMilliseconds.lowerBound)), Double(Self.wireMilliseconds.upperBound)))
        for candidate in [rounded, rounded - 1, rounded + 1] where Date(milliseconds: candidate) == self { return candidate }
        return rounded
    }

    package init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// A time from the wire; nil outside `wireMilliseconds`, and for the few times a `Date` cannot hold
    /// exactly (some before -4,397,000,000,000,000, about 137,000 BC, where its Double counts seconds
    /// in steps wider than a millisecond), which would otherwise come back different from what was sent.
    package init?(wireMilliseconds milliseconds: Int64) {
        guard Self.wireMilliseconds.contains(milliseconds) else { return nil }
        self.init(milliseconds: milliseconds)
        guard self.milliseconds == milliseconds else { return nil }
    }

    /// A time from the wire sent with a fraction of a millisecond (what `Date`'s own encoding writes),
    /// rounded to the millisecond; nil outside `wireMilliseconds`.
    package init?(roundingWireMilliseconds milliseconds: Double) {
        let rounded = milliseconds.rounded()
        guard rounded >= Double(Self.wireMilliseconds.lowerBound), rounded <= Double(Self.wireMilliseconds.upperBound) else {
            return nil
        }
        self.init(milliseconds: Int64(rounded))
    }
}

extension Date {
    /// Decodes a wire time (fractions of a millisecond rounded), refusing one outside `wireMilliseconds`
    /// with an error that says so.
    init<Key: CodingKey>(wireMillisecondsIn container: KeyedDecodingContainer<Key>, forKey key: Key) throws {
        guard let date = Date(roundingWireMilliseconds: try container.decode(Double.self, forKey: key)) else {
            throw Self.outOfRange(forKey: key, in: container)
        }
        self = date
    }

    static func outOfRange<Key: CodingKey>(forKey key: Key, in container: KeyedDecodingContainer<Key>) -> DecodingError {
        .dataCorruptedError(forKey: key, in: container, debugDescription: wireRangeDescription)
    }

    /// What a wire time may be, for error messages.
    package static let wireRangeDescription =
        "a TIMESTAMP is milliseconds since 1970 between -8640000000000000 and 8640000000000000 "
        + "(before -4397000000000000 only the values a date can hold exactly)"
}
