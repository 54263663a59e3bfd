import NimbusCore

/// Records of one type that match a predicate, in an order (CloudKit's `CKQuery`).
///
/// ```swift
/// let query = try Query(recordType: "Items", predicate: "list == %@ AND number > %@", list.recordID, 3)
/// ```
public struct Query: Sendable, Hashable {
    public var recordType: String
    public var filters: [QueryFilter]
    public var sortDescriptors: [SortDescriptor]

    /// Parses an `NSPredicate`-format string; an invalid one throws `Predicate.ParseError` with its position.
    public init(recordType: String, predicate: String = "TRUEPREDICATE", _ arguments: any RecordValue...) throws {
        try self.init(recordType: recordType, predicate: predicate, argumentArray: arguments)
    }

    /// The arguments as one array, as `NSPredicate(format:argumentArray:)` takes them.
    public init(recordType: String, predicate: String, argumentArray arguments: [any RecordValue]) throws {
        self.recordType = recordType
        self.filters = try Predicate.filters(predicate, arguments.map(\.fieldValue))
        self.sortDescriptors = []
    }

    public init(recordType: String, filters: [QueryFilter]) {
        self.recordType = recordType
        self.filters = filters
        self.sortDescriptors = []
    }

    public struct SortDescriptor: Sendable, Hashable {
        public var key: String
        public var ascending: Bool

        public init(key: String, ascending: Bool = true) {
            self.key = key
            self.ascending = ascending
        }
    }

    var wire: RecordQuery {
        RecordQuery(
            recordType: recordType, filterBy: filters.isEmpty ? nil : filters,
            sortBy: sortDescriptors.isEmpty
                ? nil
                : sortDescriptors.map { sort in
                    QueryFilter.systemFields[sort.key].map { QuerySort(systemFieldName: $0, ascending: sort.ascending) }
                        ?? QuerySort(fieldName: sort.key, ascending: sort.ascending)
                })
    }
}

/// Where a query's next page starts (CloudKit's `CKQueryOperation.Cursor`).
public struct QueryCursor: Sendable, Hashable {
    let query: Query
    let zoneID: RecordZoneID?
    let desiredKeys: [String]?
    let resultsLimit: Int?
    let marker: String
}
