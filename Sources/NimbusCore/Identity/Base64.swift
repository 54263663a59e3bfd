/// Base64 (RFC 4648) in the two forms Nimbus writes, and one reader for both.
///
/// Secrets that travel in URLs (session tokens) are base64url without padding. Change tokens and query
/// markers are standard padded base64, which clients that look inside an opaque token decode without
/// surprise; tokens handed out before that were base64url, so the reader takes either alphabet, padded
/// or not. Written out rather than derived from Foundation's base64 with character replacements,
/// because change tokens are encoded on every write and decoded on every read of a change feed.
package enum Base64 {
    package enum Alphabet: Sendable {
        /// `+` and `/`, padded with `=`.
        case standard
        /// `-` and `_`, unpadded (RFC 4648 §5).
        case url
    }

    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in standard.enumerated() { values[Int(character)] = UInt8(index) }
        for (index, character) in url.enumerated() { values[Int(character)] = UInt8(index) }
        return values
    }()

    package static func encode(_ bytes: some Collection<UInt8>, _ alphabet: Alphabet) -> String {
        let characters = alphabet == .standard ? standard : url
        var output = [UInt8]()
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = second == nil ? nil : iterator.next()
            let chunk = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            output.append(characters[Int(chunk >> 18 & 63)])
            output.append(characters[Int(chunk >> 12 & 63)])
            if second != nil { output.append(characters[Int(chunk >> 6 & 63)]) }
            if third != nil { output.append(characters[Int(chunk & 63)]) }
        }
        if alphabet == .standard {
            while output.count % 4 != 0 { output.append(UInt8(ascii: "=")) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The decoded bytes of base64 in either alphabet, padded or not; nil when `text` is neither.
    package static func decode(_ text: String) -> [UInt8]? {
        var characters = Array(text.utf8)
        if characters.count % 4 == 0, characters.last == UInt8(ascii: "=") {
            characters.removeLast()
            if characters.last == UInt8(ascii: "=") { characters.removeLast() }
        }
        guard characters.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(characters.count * 3 / 4)
        var index = 0
        while index < characters.count {
            let end = min(index + 4, characters.count)
            var chunk: UInt32 = 0
            for position in index..<end {
                let value = values[Int(characters[position])]
                guard value != 0xFF else { return nil }
                chunk |= UInt32(value) << (6 * UInt32(3 - (position - index)))
            }
            let produced = end - index - 1
            for byte in 0..<produced { output.append(UInt8(truncatingIfNeeded: chunk >> (16 - 8 * UInt32(byte)))) }
            index = end
        }
        return output
    }
}
