/// Base64url without padding (RFC 4648 §5): the alphabet tokens use so they travel in URLs unescaped.
///
/// Written out rather than derived from Foundation's base64 with character replacements, because
/// change tokens are encoded on every write and decoded on every read of a change feed.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { values[Int(character)] = UInt8(index) }
        return values
    }()

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = second == nil ? nil : iterator.next()
            let chunk = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            output.append(alphabet[Int(chunk >> 18 & 63)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
            if second != nil { output.append(alphabet[Int(chunk >> 6 & 63)]) }
            if third != nil { output.append(alphabet[Int(chunk & 63)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The decoded bytes, or nil when `text` is not unpadded base64url.
    public static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
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
