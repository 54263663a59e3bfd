import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// A record of an answer: its stored bytes when they go out as they are, or a `RecordWire` to code.
///
/// A stored record is `StoredRecord`'s JSON, whose keys are the wire's; splicing the name, change tag
/// and zone in front of it answers without decoding and re-encoding each record, which dominated the
/// cost of change feeds and queries.
enum OutgoingRecord: Sendable {
    case stored(name: String, sequence: Int64, zoneID: ZoneID, payload: Data)
    case wire(RecordWire)
    case failure(RecordError)

    /// The record as the feed or query answers it; spliced when nothing about it changes on the way out
    /// (all keys, numbers as numbers).
    static func make(_ entry: Entry, zoneID: ZoneID, desiredKeys: [String]?, numbersAsStrings: Bool, links: AssetLinks) throws
        -> OutgoingRecord
    {
        let payload = entry.payload ?? Data()
        if desiredKeys == nil, !numbersAsStrings, StoredRecord.isSpliceable(payload) {
            return .stored(name: entry.key, sequence: entry.sequence, zoneID: zoneID, payload: payload)
        }
        return .wire(
            links.apply(
                try StoredRecord(entry: entry).wire(
                    name: entry.key, sequence: entry.sequence, zoneID: zoneID, desiredKeys: desiredKeys)))
    }
}

extension JSONWriter {
    mutating func record(_ record: OutgoingRecord) throws {
        switch record {
        case .stored(let name, let sequence, let zoneID, let payload):
            raw("{\"recordName\":")
            string(name)
            raw(",\"recordChangeTag\":")
            string(StoredRecord.changeTag(sequence))
            raw(",\"zoneID\":")
            zoneID.write(to: &self)
            raw(",")
            append(json: payload.dropFirst())
        case .wire(let wire): try wire.write(to: &self)
        case .failure(let failure): try failure.write(to: &self)
        }
    }

    mutating func records(_ records: [OutgoingRecord]) throws {
        raw("[")
        for (index, record) in records.enumerated() {
            if index > 0 { raw(",") }
            try self.record(record)
        }
        raw("]")
    }

    var body: JSONBody { JSONBody(bytes: bytes) }
}

/// An answer already written as JSON bytes.
struct JSONBody: ResponseGenerator {
    var bytes: [UInt8]

    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
