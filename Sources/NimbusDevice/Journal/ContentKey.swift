import Foundation

/// A content hash as the engine holds it: 64 lowercase hexadecimal digits (a SHA-256, as every version's is)
/// held inline in 32 bytes, anything else as its text. A query over 100,000 items compares the server's and
/// the disk's hash of each; as strings of their own, each comparison read two blocks of memory from far
/// apart, and those reads were most of the query's time. A round over 100,000 files holds three trees and a
/// scan: as strings, each tree's hashes took 96 bytes of heap an item.
enum ContentKey: Hashable, Sendable {
    case sha256(UInt64, UInt64, UInt64, UInt64)
    case text(String)

    /// The key of the text `bytes` hold (UTF-8), without making a string of a SHA-256's digits.
    init(utf8 bytes: UnsafeRawBufferPointer) {
        self = Self.sha256(of: bytes) ?? .text(String(decoding: bytes, as: UTF8.self))
    }

    /// The key of `text`.
    init(_ text: String) {
        var text = text
        self = text.withUTF8 { ContentKey(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// The text the key was made from.
    var text: String {
        switch self {
        case .text(let text): return text
        case .sha256(let a, let b, let c, let d):
            return String(unsafeUninitializedCapacity: 64) { digits in
                for (index, word) in [a, b, c, d].enumerated() {
                    for position in 0..<16 {
                        let value = Int(truncatingIfNeeded: word >> UInt64(60 - 4 * position)) & 0x0F
                        digits[index * 16 + position] = Self.hexadecimalDigits[value]
                    }
                }
                return 64
            }
        }
    }

    private static let hexadecimalDigits = Array("0123456789abcdef".utf8)

    /// The four words of 64 lowercase hexadecimal digits; nil for anything else (which is then kept as text, so
    /// that two keys are equal exactly when their texts are).
    private static func sha256(of digits: UnsafeRawBufferPointer) -> ContentKey? {
        guard digits.count == 64 else { return nil }
        return digitValues.withUnsafeBufferPointer { values in
            // Without a branch a digit: any byte that is not a digit sets a high bit in `seen`.
            let (a, b, c, d) = (
                word(digits, 0, values), word(digits, 16, values), word(digits, 32, values), word(digits, 48, values)
            )
            return (a.seen | b.seen | c.seen | d.seen) < 16 ? .sha256(a.word, b.word, c.word, d.word) : nil
        }
    }

    /// The 16 digits from `start` as a word, and every digit's value or'ed together (16 or more: not all digits).
    private static func word(_ digits: UnsafeRawBufferPointer, _ start: Int, _ values: UnsafeBufferPointer<UInt8>) -> (
        word: UInt64, seen: UInt8
    ) {
        var (word, seen): (UInt64, UInt8) = (0, 0)
        for index in start..<start + 16 {
            let value = values[Int(digits[index])]
            seen |= value
            word = word << 4 | UInt64(value & 0x0F)
        }
        return (word, seen)
    }

    /// Each byte's value as a lowercase hexadecimal digit, 0xFF for bytes that are not one. A table: reading
    /// 200,000 hashes when an app first asks, the digit-by-digit comparisons were a sixth of the time.
    private static let digitValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        default: 0xFF
        }
    }
}
