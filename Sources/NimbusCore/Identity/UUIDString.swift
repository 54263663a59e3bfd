import Foundation

/// Lower-case UUID strings, the form Nimbus uses for request and record identifiers.
package enum UUIDString {
    package static func random() -> String { UUID().uuidString.lowercased() }

    /// A version 7 UUID (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits. Record
    /// names made this way sort by creation time, so new records land at the end of the store's key
    /// index instead of on a random page each: a batch touches a few pages, not one per record.
    package static func timeOrdered(at date: Date = Date()) -> UUID {
        var bytes = Secrets.randomBytes(16)
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - index))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
