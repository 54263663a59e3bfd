import Crypto
import Foundation

/// The integer an index row names its (kind, field) by. Index rows are most of what a record write
/// inserts, and SQLite compares and stores an integer in a fraction of the time and space of two texts.
///
/// The id is a digest of the names rather than a counter, so it never depends on what a transaction
/// rolled back: a batch whose savepoint is undone cannot leave an id that a later batch hands to another
/// field. `index_fields` maps ids back to names; a write adds its fields there in its own transaction,
/// and refuses a field whose id already names another (two names sharing 63 bits of SHA-256).
package enum IndexFieldID {
    package static func of(kind: String, field: String) -> Int64 {
        let digest = SHA256.hash(data: Data(kind.utf8) + [0] + Data(field.utf8))
        let bits = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int64(bitPattern: bits >> 1)
    }
}
