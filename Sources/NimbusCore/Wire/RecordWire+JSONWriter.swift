import Foundation

// Records written by hand, as their `Codable` encoding would write them (the keys `Codable` leaves out
// when nil are left out here too), for the hot paths: saving, and answering saves.

extension FieldValue {
    package func write(to json: inout JSONWriter) throws {
        json.raw("{\"value\":")
        try writeValue(to: &json)
        json.raw(",\"type\":")
        json.string(typeName)
        json.raw("}")
    }

    private func writeValue(to json: inout JSONWriter) throws {
        switch self {
        case .string(let text): json.string(text)
        case .int64(let integer): json.numbersAsStrings ? json.string(String(integer)) : json.int(integer)
        case .double(let real):
            // JSON has no infinity or NaN, and a null value would clear the field.
            guard real.isFinite else {
                throw EncodingError.invalidValue(real, .init(codingPath: [], debugDescription: "a DOUBLE must be finite"))
            }
            json.double(real)
        case .timestamp(let date): json.int(date.milliseconds)
        case .bytes(let data): json.string(data.base64EncodedString())
        case .reference(let reference): reference.write(to: &json)
        case .location(let location): try json.value(location)
        case .asset(let asset): try json.value(asset)
        case .list(let values, _):
            json.raw("[")
            for (index, value) in values.enumerated() {
                if index > 0 { json.raw(",") }
                try value.writeValue(to: &json)
            }
            json.raw("]")
        }
    }
}

extension RecordReference {
    package func write(to json: inout JSONWriter) {
        json.raw("{\"recordName\":")
        json.string(recordName)
        if let zoneID {
            json.raw(",\"zoneID\":")
            zoneID.write(to: &json)
        }
        if let action {
            json.raw(",\"action\":")
            json.string(action.rawValue)
        }
        json.raw("}")
    }
}

extension ZoneID {
    package func write(to json: inout JSONWriter) {
        json.raw("{\"zoneName\":")
        json.string(zoneName)
        if let ownerRecordName {
            json.raw(",\"ownerRecordName\":")
            json.string(ownerRecordName)
        }
        json.raw("}")
    }
}

extension RecordWire.Stamp {
    package func write(to json: inout JSONWriter) {
        json.raw("{\"timestamp\":")
        json.int(timestamp)
        json.raw(",\"userRecordName\":")
        json.string(userRecordName)
        json.raw(",\"deviceID\":")
        json.string(deviceID)
        json.raw("}")
    }
}

extension JSONWriter {
    /// Writes `{"name": value, …}` for a dictionary of field values, and `"name": {"value": null}` for each
    /// field to clear.
    package mutating func fields(_ fields: [String: FieldValue], cleared: Set<String>? = nil) throws {
        raw("{")
        var first = true
        for (name, value) in fields {
            if !first { raw(",") }
            first = false
            string(name)
            raw(":")
            try value.write(to: &self)
        }
        for name in cleared ?? [] where fields[name] == nil {
            if !first { raw(",") }
            first = false
            string(name)
            raw(":{\"value\":null}")
        }
        raw("}")
    }
}

extension RecordWire {
    package func write(to json: inout JSONWriter) throws {
        // Share records are rare: their extra keys take the Codable path.
        guard participants == nil, publicPermission == nil, shortGUID == nil, forRecord == nil else {
            try json.value(self)
            return
        }
        var first = true
        func key(_ name: StaticString, _ json: inout JSONWriter) {
            json.raw(first ? "{" : ",")
            first = false
            json.raw(name)
        }
        if let recordName { key("\"recordName\":", &json); json.string(recordName) }
        if let recordType { key("\"recordType\":", &json); json.string(recordType) }
        if let recordChangeTag { key("\"recordChangeTag\":", &json); json.string(recordChangeTag) }
        if fields != nil || clearedFields != nil {
            key("\"fields\":", &json); try json.fields(fields ?? [:], cleared: clearedFields)
        }
        if let zoneID { key("\"zoneID\":", &json); zoneID.write(to: &json) }
        if let created { key("\"created\":", &json); created.write(to: &json) }
        if let modified { key("\"modified\":", &json); modified.write(to: &json) }
        if let deleted { key("\"deleted\":", &json); json.bool(deleted) }
        if let parent { key("\"parent\":", &json); parent.write(to: &json) }
        if let share { key("\"share\":", &json); share.write(to: &json) }
        json.raw(first ? "{}" : "}")
    }
}

extension RecordError {
    /// The error as `Codable` writes it, its server record written by hand (numbers as the writer says).
    package func write(to json: inout JSONWriter) throws {
        json.raw("{")
        if let recordName {
            json.raw("\"recordName\":")
            json.string(recordName)
            json.raw(",")
        }
        json.raw("\"reason\":")
        json.string(reason)
        json.raw(",\"serverErrorCode\":")
        json.string(serverErrorCode.rawValue)
        json.raw(",\"uuid\":")
        json.string(uuid)
        if let retryAfter {
            json.raw(",\"retryAfter\":")
            json.int(Int64(retryAfter))
        }
        if let serverRecord {
            json.raw(",\"serverRecord\":")
            try serverRecord.write(to: &json)
        }
        json.raw("}")
    }
}

extension RecordsModifyRequest: HandDecodable {
    /// The request as JSON, written by hand.
    package func encoded() throws -> Data {
        var json = JSONWriter()
        json.raw("{\"operations\":[")
        for (index, operation) in operations.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{\"operationType\":")
            json.string(operation.operationType.rawValue)
            json.raw(",\"record\":")
            try operation.record.write(to: &json)
            if let keys = operation.desiredKeys {
                json.raw(",\"desiredKeys\":")
                try json.value(keys)
            }
            json.raw("}")
        }
        json.raw("]")
        if let zoneID {
            json.raw(",\"zoneID\":")
            zoneID.write(to: &json)
        }
        if let atomic {
            json.raw(",\"atomic\":")
            json.bool(atomic)
        }
        if let desiredKeys {
            json.raw(",\"desiredKeys\":")
            try json.value(desiredKeys)
        }
        json.raw("}")
        return Data(json.bytes)
    }

    /// Reads the value by hand, declining (`UnsupportedJSON`) what it does not handle.
    package static func byHand(_ tree: JSONTree) throws -> RecordsModifyRequest {
        guard case .object(let members) = tree, let operations = tree["operations"]?.array,
            members.allSatisfy({ ["operations", "zoneID", "atomic", "desiredKeys", "numbersAsStrings"].contains($0.key) })
        else { throw UnsupportedJSON() }
        var request = RecordsModifyRequest(
            operations: try operations.map { operation in
                guard case .object(let keys) = operation,
                    keys.allSatisfy({ ["operationType", "record", "desiredKeys"].contains($0.key) }),
                    let type = operation["operationType"]?.string.flatMap(RecordOperation.OperationType.init(rawValue:)),
                    let record = operation["record"], operation["desiredKeys"] == nil
                else { throw UnsupportedJSON() }
                return RecordOperation(type, try RecordWire(tree: record))
            })
        if let zoneID = tree["zoneID"], !zoneID.isNull { request.zoneID = try ZoneID(tree: zoneID) }
        if let atomic = tree["atomic"], !atomic.isNull {
            guard let value = atomic.bool else { throw UnsupportedJSON() }
            request.atomic = value
        }
        guard tree["desiredKeys"] == nil || tree["desiredKeys"] == .null else { throw UnsupportedJSON() }
        if let numbersAsStrings = tree["numbersAsStrings"], !numbersAsStrings.isNull {
            guard let value = numbersAsStrings.bool else { throw UnsupportedJSON() }
            request.numbersAsStrings = value
        }
        return request
    }
}

extension RecordsResponse: HandDecodable {
    /// The answer as JSON, written by hand.
    package func encoded(numbersAsStrings: Bool = false) throws -> [UInt8] {
        var json = JSONWriter(numbersAsStrings: numbersAsStrings)
        json.raw("{\"records\":[")
        for (index, item) in records.enumerated() {
            if index > 0 { json.raw(",") }
            switch item {
            case .record(let record): try record.write(to: &json)
            case .failure(let failure): try failure.write(to: &json)
            }
        }
        json.raw("]")
        if let syncToken {
            json.raw(",\"syncToken\":")
            json.string(syncToken)
        }
        if let moreComing {
            json.raw(",\"moreComing\":")
            json.bool(moreComing)
        }
        json.raw("}")
        return json.bytes
    }

    /// Reads the value by hand, declining (`UnsupportedJSON`) what it does not handle.
    package static func byHand(_ tree: JSONTree) throws -> RecordsResponse {
        guard let records = tree["records"]?.array, records.allSatisfy({ $0["serverErrorCode"] == nil }) else {
            throw UnsupportedJSON()
        }
        return RecordsResponse(
            records: try records.map { .record(try RecordWire(tree: $0)) }, syncToken: tree["syncToken"]?.string,
            moreComing: tree["moreComing"]?.bool)
    }
}
