import Foundation

// Records decoded from a `JSONTree` by hand, with the same rules as their `Codable` decoding.

extension RecordWire {
    package init(tree: JSONTree) throws {
        guard case .object(let members) = tree else { throw UnsupportedJSON() }
        self.init()
        for (key, value) in members where !value.isNull {
            switch key {
            case "recordName": recordName = try Self.text(value)
            case "recordType": recordType = try Self.text(value)
            case "recordChangeTag": recordChangeTag = try Self.text(value)
            case "deleted":
                guard let flag = value.bool else { throw UnsupportedJSON() }
                deleted = flag
            case "zoneID": zoneID = try ZoneID(tree: value)
            case "created": created = try Stamp(tree: value)
            case "modified": modified = try Stamp(tree: value)
            case "parent": parent = try RecordReference(tree: value)
            case "share": share = try RecordReference(tree: value)
            case "fields":
                guard case .object(let fieldMembers) = value else { throw UnsupportedJSON() }
                var fields = [String: FieldValue]()
                fields.reserveCapacity(fieldMembers.count)
                for (name, field) in fieldMembers {
                    if field.isNull || field["value"]?.isNull ?? true {
                        guard field.isNull || field.object != nil else { throw UnsupportedJSON() }
                        clearedFields = (clearedFields ?? []).union([name])
                    } else {
                        fields[name] = try FieldValue(tree: field)
                    }
                }
                self.fields = fields
            default: throw UnsupportedJSON()  // share records and anything newer: the Codable path
            }
        }
    }

    static func text(_ tree: JSONTree) throws -> String {
        guard let text = tree.string else { throw UnsupportedJSON() }
        return text
    }
}

extension RecordWire.Stamp {
    init(tree: JSONTree) throws {
        guard let timestamp = tree["timestamp"]?.int64, let user = tree["userRecordName"]?.string,
            let device = tree["deviceID"]?.string
        else { throw UnsupportedJSON() }
        self.init(timestamp: timestamp, userRecordName: user, deviceID: device)
    }
}

extension ZoneID {
    init(tree: JSONTree) throws {
        guard let name = tree["zoneName"]?.string else { throw UnsupportedJSON() }
        self.init(zoneName: name, ownerRecordName: try tree.optional("ownerRecordName", \.string))
    }
}

extension RecordReference {
    init(tree: JSONTree) throws {
        guard let name = tree["recordName"]?.string else { throw UnsupportedJSON() }
        let action = try tree.optional("action") { $0.string.flatMap(Action.init(rawValue:)) }
        self.init(recordName: name, zoneID: try tree.optional("zoneID", ZoneID.init(tree:)), action: action)
    }
}

extension FieldValue {
    init(tree: JSONTree) throws {
        guard let value = tree["value"] else { throw UnsupportedJSON() }
        guard let type = tree["type"], !type.isNull else {
            self = try Self.inferred(value)
            return
        }
        guard let name = type.string else { throw UnsupportedJSON() }
        self = try Self.value(value, type: name)
    }

    /// A value sent without its type, as `Codable` infers it (`FieldValue.inferType`), for the shapes whose
    /// inference is certain: a whole number within INT64, a number with a fraction, a string, a reference,
    /// a location, an empty list. Others (`2.0`, which `JSONDecoder` reads as an INT64, and non-empty
    /// lists) take the `Codable` path.
    private static func inferred(_ tree: JSONTree) throws -> FieldValue {
        switch tree {
        case .number(let text):
            if let integer = Int64(text) { return .int64(integer) }
            guard text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }),
                let real = Double(text), real.rounded(.towardZero) != real
            else { throw UnsupportedJSON() }
            return .double(real)
        case .string(let text): return .string(text)
        case .object:
            if tree["recordName"] != nil { return .reference(try RecordReference(tree: tree)) }
            guard tree["latitude"] != nil else { throw UnsupportedJSON() }
            return .location(try location(tree))
        case .array(let elements) where elements.isEmpty: return .list([], elementType: "STRING")
        default: throw UnsupportedJSON()
        }
    }

    private static func location(_ tree: JSONTree) throws -> Location {
        guard let latitude = tree["latitude"]?.double, let longitude = tree["longitude"]?.double else { throw UnsupportedJSON() }
        var location = Location(latitude: latitude, longitude: longitude)
        location.horizontalAccuracy = try tree.optional("horizontalAccuracy", \.double)
        location.verticalAccuracy = try tree.optional("verticalAccuracy", \.double)
        location.altitude = try tree.optional("altitude", \.double)
        location.speed = try tree.optional("speed", \.double)
        location.course = try tree.optional("course", \.double)
        location.timestamp = try tree.optional("timestamp", \.int64)
        return location
    }

    /// The element types of lists the hand decoder reads (assets' go the `Codable` way).
    private static let listElementTypes: Set<String> = [
        "STRING", "INT64", "DOUBLE", "TIMESTAMP", "BYTES", "REFERENCE", "LOCATION",
    ]

    private static func value(_ tree: JSONTree, type: String) throws -> FieldValue {
        if type.hasSuffix("_LIST") {
            guard let elements = tree.array else { throw UnsupportedJSON() }
            let elementType = String(type.dropLast(5))
            guard Self.listElementTypes.contains(elementType) else { throw UnsupportedJSON() }
            return .list(
                try elements.map { try value($0, type: elementType) },
                elementType: elementType == "ASSET" ? "ASSETID" : elementType)
        }
        switch type {
        case "STRING": return .string(try RecordWire.text(tree))
        case "INT64":
            guard let integer = tree.int64 ?? tree.string.flatMap({ Int64($0) }) else { throw UnsupportedJSON() }
            return .int64(integer)
        case "DOUBLE":
            guard let real = tree.double else { throw UnsupportedJSON() }
            return .double(real)
        case "TIMESTAMP":
            guard
                let date = tree.int64.flatMap(Date.init(wireMilliseconds:))
                    ?? tree.double.flatMap(Date.init(roundingWireMilliseconds:))
            else { throw UnsupportedJSON() }
            return .timestamp(date)
        case "BYTES":
            guard let data = Data(base64Encoded: try RecordWire.text(tree)) else { throw UnsupportedJSON() }
            return .bytes(data)
        case "REFERENCE": return .reference(try RecordReference(tree: tree))
        case "LOCATION": return .location(try location(tree))
        default: throw UnsupportedJSON()  // assets and anything newer: the Codable path
        }
    }
}

extension ZoneChangesResponse: HandDecodable {
    /// Reads the value by hand, declining (`UnsupportedJSON`) what it does not handle.
    package static func byHand(_ tree: JSONTree) throws -> ZoneChangesResponse {
        guard let zones = tree["zones"]?.array else { throw UnsupportedJSON() }
        return ZoneChangesResponse(
            zones: try zones.map { zone in
                guard let zoneID = try zone["zoneID"].map(ZoneID.init(tree:)) else { throw UnsupportedJSON() }
                if let code = zone["serverErrorCode"]?.string {
                    return ZoneChanges(
                        zoneID: zoneID, error: NimbusError(ErrorCode(rawValue: code), zone["reason"]?.string ?? code))
                }
                guard let records = zone["records"]?.array, let token = zone["syncToken"]?.string,
                    let more = zone["moreComing"]?.bool
                else { throw UnsupportedJSON() }
                return ZoneChanges(
                    zoneID: zoneID, records: try records.map(RecordWire.init(tree:)), syncToken: token, moreComing: more)
            })
    }
}

extension RecordsQueryResponse: HandDecodable {
    /// Reads the value by hand, declining (`UnsupportedJSON`) what it does not handle.
    package static func byHand(_ tree: JSONTree) throws -> RecordsQueryResponse {
        guard let records = tree["records"]?.array, records.allSatisfy({ $0["serverErrorCode"] == nil }) else {
            throw UnsupportedJSON()
        }
        return RecordsQueryResponse(
            records: try records.map { .record(try RecordWire(tree: $0)) }, continuationMarker: tree["continuationMarker"]?.string
        )
    }
}
