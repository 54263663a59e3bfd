import Foundation

// Key-value batches coded by hand, with the same rules as their `Codable` coding: every batch is decoded
// once by the server and encoded once by the device, and Foundation's coders were a tenth of the work.
// Anything the hand decoders do not handle throws `UnsupportedJSON`, and the caller decodes with
// `JSONDecoder` instead (which also words the errors of bad input).

extension KeyValue: HandDecodable {
    package init(tree: JSONTree) throws {
        guard case .object(let members) = tree, members.count == 2, let type = tree["type"]?.string, let value = tree["value"]
        else { throw UnsupportedJSON() }
        switch type {
        case "STRING":
            guard let text = value.string else { throw UnsupportedJSON() }
            self = .string(text)
        case "INT64":
            guard let integer = value.int64 else { throw UnsupportedJSON() }
            self = .int64(integer)
        case "DOUBLE":
            guard let real = value.double, real.isFinite else { throw UnsupportedJSON() }
            self = .double(real)
        case "BOOLEAN":
            guard let bool = value.bool else { throw UnsupportedJSON() }
            self = .bool(bool)
        case "TIMESTAMP":
            guard let date = value.int64.flatMap(Date.init(wireMilliseconds:)) else { throw UnsupportedJSON() }
            self = .date(date)
        case "BYTES":
            guard let data = value.string.flatMap({ Data(base64Encoded: $0) }) else { throw UnsupportedJSON() }
            self = .data(data)
        case "LIST":
            guard let elements = value.array else { throw UnsupportedJSON() }
            self = .array(try elements.map(KeyValue.init(tree:)))
        case "DICTIONARY":
            guard case .object(let entries) = value, Set(entries.map(\.key)).count == entries.count else {
                throw UnsupportedJSON()
            }
            self = .dictionary(Dictionary(uniqueKeysWithValues: try entries.map { ($0.key, try KeyValue(tree: $0.value)) }))
        default: throw UnsupportedJSON()
        }
    }

    package func write(to json: inout JSONWriter) {
        json.raw("{\"type\":")
        json.string(typeName)
        json.raw(",\"value\":")
        switch self {
        case .string(let text): json.string(text)
        case .int64(let integer): json.int(integer)
        case .double(let real): json.double(real)
        case .bool(let bool): json.bool(bool)
        case .date(let date): json.int(date.milliseconds)
        case .data(let data): json.string(data.base64EncodedString())
        case .array(let values):
            json.raw("[")
            for (index, value) in values.enumerated() {
                if index > 0 { json.raw(",") }
                value.write(to: &json)
            }
            json.raw("]")
        case .dictionary(let values):
            json.raw("{")
            for (index, key) in values.keys.sorted().enumerated() {
                if index > 0 { json.raw(",") }
                json.string(key)
                json.raw(":")
                values[key]!.write(to: &json)
            }
            json.raw("}")
        }
        json.raw("}")
    }

    /// The value as JSON, as stored and sent.
    package func encoded() -> Data {
        var json = JSONWriter()
        write(to: &json)
        return Data(json.bytes)
    }

    package static func byHand(_ tree: JSONTree) throws -> KeyValue { try KeyValue(tree: tree) }
}

extension KeyValueOperation {
    init(tree: JSONTree) throws {
        guard case .object(let members) = tree, Set(members.map(\.key)).count == members.count,
            members.allSatisfy({ ["operationType", "key", "value"].contains($0.key) }), let key = tree["key"]?.string
        else { throw UnsupportedJSON() }
        switch tree["operationType"]?.string {
        case "set":
            guard let value = tree["value"] else { throw UnsupportedJSON() }
            self.init(key: key, value: try KeyValue(tree: value))
        case "remove": self.init(key: key, value: nil)
        default: throw UnsupportedJSON()
        }
    }
}

extension KeyValueModifyRequest: HandDecodable {
    /// The request as JSON, written by hand.
    package func encoded() -> Data {
        var json = JSONWriter()
        json.raw("{\"operations\":[")
        for (index, operation) in operations.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{\"operationType\":")
            json.string(operation.value == nil ? "remove" : "set")
            json.raw(",\"key\":")
            json.string(operation.key)
            if let value = operation.value {
                json.raw(",\"value\":")
                value.write(to: &json)
            }
            json.raw("}")
        }
        json.raw("]}")
        return Data(json.bytes)
    }

    /// Reads the value by hand, declining (`UnsupportedJSON`) what it does not handle.
    package static func byHand(_ tree: JSONTree) throws -> KeyValueModifyRequest {
        guard case .object(let members) = tree, members.count == 1, let operations = tree["operations"]?.array
        else { throw UnsupportedJSON() }
        return KeyValueModifyRequest(operations: try operations.map(KeyValueOperation.init(tree:)))
    }
}

extension KeyValueModifyResponse: HandDecodable {
    /// The answer as JSON, written by hand.
    package func encoded() -> [UInt8] {
        var json = JSONWriter()
        json.raw("{\"syncToken\":")
        json.string(syncToken)
        json.raw(",\"sequence\":")
        json.int(sequence)
        json.raw("}")
        return json.bytes
    }

    /// Reads the value by hand, declining (`UnsupportedJSON`) what it does not handle.
    package static func byHand(_ tree: JSONTree) throws -> KeyValueModifyResponse {
        guard let token = tree["syncToken"]?.string, let sequence = tree["sequence"]?.int64 else { throw UnsupportedJSON() }
        return KeyValueModifyResponse(syncToken: token, sequence: sequence)
    }
}
