/// A query: records of one type matching every filter, in the sort order.
public struct RecordQuery: Codable, Sendable, Hashable {
    public var recordType: String
    public var filterBy: [QueryFilter]?
    public var sortBy: [QuerySort]?

    public init(recordType: String, filterBy: [QueryFilter]? = nil, sortBy: [QuerySort]? = nil) {
        self.recordType = recordType
        self.filterBy = filterBy
        self.sortBy = sortBy
    }
}

/// One sort key of a query; `relativeLocation` sorts a LOCATION field by distance from it.
public struct QuerySort: Codable, Sendable, Hashable {
    public var fieldName: String?
    public var systemFieldName: String?
    public var ascending: Bool?
    public var relativeLocation: FieldValue?

    public init(
        fieldName: String? = nil, systemFieldName: String? = nil, ascending: Bool? = nil, relativeLocation: FieldValue? = nil
    ) {
        self.fieldName = fieldName
        self.systemFieldName = systemFieldName
        self.ascending = ascending
        self.relativeLocation = relativeLocation
    }
}
