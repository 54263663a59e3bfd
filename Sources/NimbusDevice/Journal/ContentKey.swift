import Foundation

/// A content hash as apps' metadata queries compare it: 64 lowercase hexadecimal digits (a SHA-256, as every
/// version's is) held inline in 32 bytes, anything else as its text. A query over 100,000 items compares the
/// server's and the disk's hash of each; as strings of their own, each comparison read two blocks of memory
/// from far apart, and those reads were most of the query's time.
enum ContentKey: Hashable, Sendable {
    case sha256(UInt64, UInt64, UInt64, UInt64)
    case text(String)

    /// The key of the text `bytes` hold (UTF-8), without making a string of a SHA-256's digits.
    init(utf8 bytes: Data) {
        self = bytes.withUnsafeBytes(Self.sha256(of:)) ?? .text(String(decoding: bytes, as: UTF8.self))
    }

    /// The four words of 64 lowercase hexadecimal digits; nil for anything else (which is then kept as text, so
    /// that two keys are equal exactly when their texts are).
    private static func sha256(of digits: UnsafeRawBufferPointer) -> ContentKey? {
        guard digits.count == 64 else { return nil }
        func word(from start: Int) -> UInt64? {
            var word: UInt64 = 0
            for digit in digits[start..<start + 16] {
                switch digit {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): word = word << 4 | UInt64(digit - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): word = word << 4 | UInt64(digit - UInt8(ascii: "a") + 10)
                default: return nil
                }
            }
            return word
        }
        guard let a = word(from: 0), let b = word(from: 16), let c = word(from: 32), let d = word(from: 48) else { return nil }
        return .sha256(a, b, c, d)
    }
}
