import Crypto
import Foundation

/// Random secrets and their stored form.
///
/// Secrets (session and API tokens) are shown to their owner once and stored only as a SHA-256
/// digest, so a leaked database does not leak usable credentials.
package enum Secrets {
    /// `count` random bytes from the system's cryptographically secure generator.
    package static func randomBytes(_ count: Int) -> [UInt8] {
        // Eight bytes a draw: each draw is a system call (getrandom), and one a byte made creating a
        // record name cost more than encoding the record.
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(count)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0.prefix(count - bytes.count)) }
        }
        return bytes
    }

    /// 64 lower-case hexadecimal characters: the shape of a CloudKit API token.
    package static func apiToken() -> String { hex(randomBytes(32)) }

    /// A session token: 32 random bytes, base64url without padding (safe in query strings).
    package static func sessionToken() -> String { Base64.encode(randomBytes(32), .url) }

    /// What every app password starts with. HTTP Basic takes only app passwords, never session tokens
    /// (which the account password signs in to), and the prefix tells the two apart before any lookup.
    package static let appPasswordPrefix = "nimbus-app-"

    /// An app password: what a program that can only send a user name and a password (a WebDAV client)
    /// signs in with; shown once, stored as its digest like a session token.
    package static func appPassword() -> String { appPasswordPrefix + Base64.encode(randomBytes(24), .url) }

    /// The stored form of a secret: hexadecimal SHA-256.
    package static func digest(_ secret: String) -> String { hex(Array(SHA256.hash(data: Data(secret.utf8)))) }

    /// An account's user record name: `_` and 32 hexadecimal characters, as CloudKit's.
    package static func userRecordName() -> String { "_" + hex(randomBytes(16)) }

    /// A readable password for generated credentials; never one beginning with `-`, which a command line
    /// (`nimbus login --password …`, as the first administrator's is typed) takes for an option.
    package static func password() -> String {
        while true {
            let password = Base64.encode(randomBytes(18), .url)
            if !password.hasPrefix("-") { return password }
        }
    }

    /// Hexadecimal HMAC-SHA256 of `message` under `key`: what signed URLs carry.
    package static func hmac(key: [UInt8], _ message: String) -> String {
        hex(Array(HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: SymmetricKey(data: key))))
    }

    /// Compares two secrets in time independent of where they differ.
    package static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// Lowercase hexadecimal, as SHA-256s and tokens are written.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    package static func isAPITokenShaped(_ token: String) -> Bool {
        token.utf8.count == 64
            && token.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }
    }
}
