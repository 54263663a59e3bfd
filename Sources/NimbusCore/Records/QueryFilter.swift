/// One condition of a CloudKit query (`query.filterBy[]`); all of a query's filters must hold.
public struct QueryFilter: Hashable, Codable, Sendable {
    public var fieldName: String?
    /// A system field such as `recordName` or `createdTimestamp`, instead of `fieldName`.
    public var systemFieldName: String?
    public var comparator: Comparator
    public var fieldValue: FieldValue
    /// Metres, for `NEAR`.
    public var distance: Double?

    public init(
        fieldName: String? = nil, systemFieldName: String? = nil, comparator: Comparator, fieldValue: FieldValue,
        distance: Double? = nil
    ) {
        self.fieldName = fieldName
        self.systemFieldName = systemFieldName
        self.comparator = comparator
        self.fieldValue = fieldValue
        self.distance = distance
    }

    /// Every comparator of CloudKit Web Services.
    public enum Comparator: String, Codable, Sendable, CaseIterable {
        case equals = "EQUALS", notEquals = "NOT_EQUALS"
        case lessThan = "LESS_THAN", lessThanOrEquals = "LESS_THAN_OR_EQUALS"
        case greaterThan = "GREATER_THAN", greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
        case near = "NEAR"
        case containsAllTokens = "CONTAINS_ALL_TOKENS", containsAnyTokens = "CONTAINS_ANY_TOKENS"
        case `in` = "IN", notIn = "NOT_IN"
        case beginsWith = "BEGINS_WITH", notBeginsWith = "NOT_BEGINS_WITH"
        case listContains = "LIST_CONTAINS", notListContains = "NOT_LIST_CONTAINS"
        case listContainsAny = "LIST_CONTAINS_ANY", notListContainsAny = "NOT_LIST_CONTAINS_ANY"
        case listContainsAll = "LIST_CONTAINS_ALL", notListContainsAll = "NOT_LIST_CONTAINS_ALL"
        case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH", notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"

        /// The comparator that holds exactly when this one does not, where CloudKit has one.
        public var negated: Comparator? {
            switch self {
            case .equals: .notEquals
            case .notEquals: .equals
            case .lessThan: .greaterThanOrEquals
            case .greaterThanOrEquals: .lessThan
            case .greaterThan: .lessThanOrEquals
            case .lessThanOrEquals: .greaterThan
            case .in: .notIn
            case .notIn: .in
            case .beginsWith: .notBeginsWith
            case .notBeginsWith: .beginsWith
            case .listContains: .notListContains
            case .notListContains: .listContains
            case .listContainsAny: .notListContainsAny
            case .notListContainsAny: .listContainsAny
            case .listContainsAll: .notListContainsAll
            case .notListContainsAll: .listContainsAll
            case .listMemberBeginsWith: .notListMemberBeginsWith
            case .notListMemberBeginsWith: .listMemberBeginsWith
            case .near, .containsAllTokens, .containsAnyTokens: nil
            }
        }
    }

    /// Native `CKQuery` key paths that name system fields, mapped to their web names.
    public static let systemFields: [String: String] = [
        "recordName": "recordName", "___recordID": "recordName", "recordID": "recordName",
        "___createTime": "createdTimestamp", "creationDate": "createdTimestamp",
        "___modTime": "modifiedTimestamp", "modificationDate": "modifiedTimestamp",
        "___createdBy": "createdUserRecordName", "creatorUserRecordID": "createdUserRecordName",
        "___modifiedBy": "modifiedUserRecordName", "lastModifiedUserRecordID": "modifiedUserRecordName",
        "___share": "share", "___parent": "parent", "parent": "parent",
    ]
}
