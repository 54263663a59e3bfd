import Foundation

/// A position in one zone's change sequence.
///
/// Clients see only the encoded string and must treat it as opaque (the one exception, in this package: a
/// device daemon reads its token's sequence to tell a push of changes it has fetched already, and takes a
/// token it cannot read as telling nothing); the zone's internal id is part of it, so a token presented to
/// another zone (or to a zone that was recreated) is recognised and refused.
/// So is the zone's epoch, which a restore from a backup advances: the history after the backup was lost,
/// and the sequence numbers it used are given again to other changes, so a token from that lost history
/// must be told apart from one handed out since (epoch 0, the first history, is left out of the text).
package struct ChangeToken: Hashable, Sendable {
    package var zoneID: Int64
    package var sequence: Int64
    package var epoch: Int64

    package init(zoneID: Int64, sequence: Int64, epoch: Int64 = 0) {
        self.zoneID = zoneID
        self.sequence = sequence
        self.epoch = epoch
    }

    package var encoded: String {
        Base64.encode("n1.\(zoneID).\(sequence)\(epoch == 0 ? "" : ".\(epoch)")".utf8, .standard)
    }

    /// Decodes a token, or throws `BAD_REQUEST` for a string that is not one.
    package init(encoded: String) throws(NimbusError) {
        guard encoded.utf8.count <= 128, let bytes = Base64.decode(encoded) else {
            throw .badRequest("syncToken is not a token this server issued")
        }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: ".")
        guard (3...4).contains(parts.count), parts[0] == "n1", let zone = Int64(parts[1]), let sequence = Int64(parts[2]),
            sequence >= 0, let epoch = parts.count == 4 ? Int64(parts[3]) : 0, epoch >= 0
        else {
            throw .badRequest("syncToken is not a token this server issued")
        }
        self.init(zoneID: zone, sequence: sequence, epoch: epoch)
    }
}

/// A position in the sequence of zone creations, changes and deletions of one account's database, as
/// `changes/database` hands it out. A different kind from zone tokens: neither is accepted for the other.
/// Carries the epoch of that sequence, as zone tokens do.
package struct DatabaseChangeToken: Hashable, Sendable {
    package var sequence: Int64
    package var epoch: Int64

    package init(sequence: Int64, epoch: Int64 = 0) {
        self.sequence = sequence
        self.epoch = epoch
    }

    package var encoded: String { Base64.encode("d1.\(sequence)\(epoch == 0 ? "" : ".\(epoch)")".utf8, .standard) }

    package init(encoded: String) throws(NimbusError) {
        guard encoded.utf8.count <= 128, let bytes = Base64.decode(encoded) else {
            throw .badRequest("syncToken is not a database token this server issued")
        }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: ".")
        guard (2...3).contains(parts.count), parts[0] == "d1", let sequence = Int64(parts[1]), sequence >= 0,
            let epoch = parts.count == 3 ? Int64(parts[2]) : 0, epoch >= 0
        else {
            throw .badRequest("syncToken is not a database token this server issued")
        }
        self.init(sequence: sequence, epoch: epoch)
    }
}
