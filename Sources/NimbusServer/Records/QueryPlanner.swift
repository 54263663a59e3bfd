import NimbusCore
import NimbusStore

/// Turns a CloudKit query's filters and sort keys into index conditions for one record type, checking
/// each against the schema: the field must exist, the value must fit its type, and the field must carry
/// the index the comparator needs (QUERYABLE, SORTABLE or SEARCHABLE).
struct QueryPlanner {
    let recordType: Schema.RecordType

    /// A field a query can name: its index field, its wire type and the indexes it has.
    private struct Target {
        var indexField: String
        var wireType: String
        var queryable = true
        var sortable = true
        var searchable = false
        var name: String
    }

    /// System fields every record indexes, by their web names.
    private static let indexedSystemTargets: [String: Target] = [
        "recordName": Target(indexField: RecordIndexer.recordNameField, wireType: "REFERENCE", name: "recordName"),
        "parent": Target(indexField: RecordIndexer.parentField, wireType: "REFERENCE", name: "parent"),
    ]

    /// System fields queries may use once the schema gives them an index, as CloudKit's need, by their web
    /// names: their schema names, which are also their index fields.
    private static let declaredSystemFields = [
        "createdTimestamp": RecordIndexer.createTimeField, "modifiedTimestamp": RecordIndexer.modTimeField,
        "createdUserRecordName": RecordIndexer.createdByField, "modifiedUserRecordName": RecordIndexer.modifiedByField,
    ]

    private func target(fieldName: String?, systemFieldName: String?) throws(NimbusError) -> Target {
        // All text is named either way: the SDK's `self CONTAINS` sends it as a system field.
        if (systemFieldName ?? fieldName) == RecordIndexer.allTokensField {
            return Target(
                indexField: RecordIndexer.allTokensField, wireType: "STRING", queryable: false, sortable: false, searchable: true,
                name: RecordIndexer.allTokensField)
        }
        if let system = systemFieldName ?? fieldName.flatMap({ QueryFilter.systemFields[$0] }) {
            if let target = Self.indexedSystemTargets[system] { return target }
            guard let schemaName = Self.declaredSystemFields[system], let wireType = Schema.systemFieldTypes[schemaName] else {
                throw .badRequest("\(system) is not a system field that queries can use")
            }
            let declared = recordType.fields.first { $0.name == schemaName }
            return Target(
                indexField: schemaName, wireType: wireType, queryable: declared?.queryable == true,
                sortable: declared?.sortable == true, name: schemaName)
        }
        guard let fieldName else { throw .badRequest("a filter or sort needs fieldName or systemFieldName") }
        guard let field = recordType.fields.first(where: { $0.name == fieldName }) else {
            throw .badRequest("record type \(recordType.name) has no field \(fieldName)")
        }
        return Target(
            indexField: field.name, wireType: field.wireType, queryable: field.queryable, sortable: field.sortable,
            searchable: field.searchable, name: field.name)
    }

    private func missingIndex(_ target: Target, _ index: String) -> NimbusError {
        // All text is no field a schema could give an index.
        guard target.name != RecordIndexer.allTokensField else {
            return .badRequest(
                "\(target.name) (all text) is searched with CONTAINS_ALL_TOKENS or CONTAINS_ANY_TOKENS only; it cannot be \(index)"
            )
        }
        return .badRequest(
            "field \(target.name) of record type \(recordType.name) is not \(index); add the index to the schema "
                + "(`\(Schema.quoted(target.name)) \(target.wireType.replacingOccurrences(of: "_LIST", with: "")) \(index)`) and deploy it"
        )
    }

    /// What one query may ask, so that it stays one SQL statement SQLite takes: a statement joins at most
    /// 64 tables (each sort key is one), nests expressions at most 1,000 deep (each condition adds a
    /// level) and binds at most 32,766 values.
    static let maxSortKeys = 16
    static let maxConditions = 64
    static let maxValues = 10_000

    /// A query's filters and sort keys as index conditions and sorts, within those limits.
    func plan(filters: [QueryFilter], sorts: [QuerySort]) throws(NimbusError)
        -> (conditions: [IndexCondition], sort: [IndexSort])
    {
        guard sorts.count <= Self.maxSortKeys else { throw .badRequest("a query sorts by at most \(Self.maxSortKeys) keys") }
        var conditions = [IndexCondition]()
        for filter in filters { conditions += try self.conditions(filter) }
        guard conditions.count <= Self.maxConditions else {
            throw .badRequest(
                "a query takes at most \(Self.maxConditions) conditions (each word of a token search and each value of "
                    + "LIST_CONTAINS_ALL is one)")
        }
        // A search of all text also binds each SEARCHABLE field it looks through, per word.
        let values = conditions.reduce(0) { total, condition in
            switch condition.match {
            case .oneOf(let values), .allOf(let values): total + values.count + condition.fields.count - 1
            default: total + condition.fields.count
            }
        }
        guard values <= Self.maxValues else {
            throw .badRequest(
                "a query compares with at most \(Self.maxValues) values (a word searched in all text counts once per SEARCHABLE field)"
            )
        }
        var sort = [IndexSort]()
        for key in sorts { sort.append(try self.sort(key)) }
        return (conditions, sort)
    }

    private func conditions(_ filter: QueryFilter) throws(NimbusError) -> [IndexCondition] {
        let target = try target(fieldName: filter.fieldName, systemFieldName: filter.systemFieldName)
        let elementType = target.wireType.replacingOccurrences(of: "_LIST", with: "")
        func values() throws(NimbusError) -> [IndexValue] {
            var elements = [FieldValue]()
            if case .list(let list, _) = filter.fieldValue { elements = list } else { elements = [filter.fieldValue] }
            for element in elements where !Self.compatible(element.typeName, elementType) {
                throw .badRequest("field \(target.name) holds \(elementType) values; the filter's value is \(element.typeName)")
            }
            return elements.flatMap(RecordIndexer.indexValues)
        }
        func single() throws(NimbusError) -> IndexValue {
            let all = try values()
            guard all.count == 1, filter.fieldValue.typeName.hasSuffix("_LIST") == false else {
                throw .badRequest("\(filter.comparator.rawValue) compares with one value, not a list")
            }
            return all[0]
        }
        func text() throws(NimbusError) -> String {
            guard case .string(let text) = filter.fieldValue else {
                throw .badRequest("\(filter.comparator.rawValue) needs a STRING value")
            }
            return text
        }
        let field = target.indexField
        switch filter.comparator {
        case .containsAllTokens, .containsAnyTokens:
            guard target.searchable else { throw missingIndex(target, "SEARCHABLE") }
            let words = RecordIndexer.words(try text()).map(IndexValue.text)
            guard !words.isEmpty else { throw .badRequest("\(filter.comparator.rawValue) needs at least one word") }
            // The words of all text (`self CONTAINS`) are those of every SEARCHABLE field of the type.
            let tokens = (field == RecordIndexer.allTokensField ? recordType.fields.filter(\.searchable).map(\.name) : [field])
                .map(RecordIndexer.tokensField)
            return filter.comparator == .containsAnyTokens
                ? [IndexCondition(anyOf: tokens, .oneOf(words))] : words.map { IndexCondition(anyOf: tokens, .equal($0)) }
        default:
            guard target.queryable else { throw missingIndex(target, "QUERYABLE") }
        }
        switch filter.comparator {
        case .equals: return [IndexCondition(field: field, .equal(try single()))]
        case .notEquals: return [IndexCondition(field: field, .equal(try single()), negated: true)]
        case .lessThan: return [IndexCondition(field: field, .lessThan(try single()))]
        case .lessThanOrEquals: return [IndexCondition(field: field, .lessThanOrEqual(try single()))]
        case .greaterThan: return [IndexCondition(field: field, .greaterThan(try single()))]
        case .greaterThanOrEquals: return [IndexCondition(field: field, .greaterThanOrEqual(try single()))]
        case .in, .listContainsAny: return [IndexCondition(field: field, .oneOf(try values()))]
        case .notIn, .notListContainsAny: return [IndexCondition(field: field, .oneOf(try values()), negated: true)]
        case .listContains: return [IndexCondition(field: field, .equal(try single()))]
        case .notListContains: return [IndexCondition(field: field, .equal(try single()), negated: true)]
        case .listContainsAll: return try values().map { IndexCondition(field: field, .equal($0)) }
        case .notListContainsAll: return [IndexCondition(field: field, .allOf(try values()), negated: true)]
        case .beginsWith, .listMemberBeginsWith: return [IndexCondition(field: field, .prefix(try text()))]
        case .notBeginsWith, .notListMemberBeginsWith: return [IndexCondition(field: field, .prefix(try text()), negated: true)]
        case .near:
            guard case .location(let location) = filter.fieldValue, elementType == "LOCATION" else {
                throw .badRequest("NEAR compares a LOCATION field with a LOCATION value")
            }
            guard let distance = filter.distance, distance.isFinite, distance >= 0 else {
                throw .badRequest("NEAR needs a distance in metres")
            }
            return [
                IndexCondition(
                    field: field, .within(meters: distance, latitude: location.latitude, longitude: location.longitude))
            ]
        case .containsAllTokens, .containsAnyTokens: return []
        }
    }

    private func sort(_ sort: QuerySort) throws(NimbusError) -> IndexSort {
        let target = try target(fieldName: sort.fieldName, systemFieldName: sort.systemFieldName)
        guard target.sortable else { throw missingIndex(target, "SORTABLE") }
        let ascending = sort.ascending ?? true
        guard let relative = sort.relativeLocation else { return IndexSort(field: target.indexField, ascending: ascending) }
        guard case .location(let location) = relative, target.wireType == "LOCATION" else {
            throw .badRequest("relativeLocation sorts a LOCATION field by distance from a LOCATION value")
        }
        return IndexSort(
            field: target.indexField, ascending: ascending,
            order: .distance(latitude: location.latitude, longitude: location.longitude))
    }

    /// Whether a filter value of one type can be compared with a field of another: numbers with numbers,
    /// record names given as strings or references.
    private static func compatible(_ valueType: String, _ fieldType: String) -> Bool {
        let numeric: Set = ["INT64", "DOUBLE", "TIMESTAMP"]
        let names: Set = ["STRING", "REFERENCE"]
        return valueType == fieldType || (numeric.contains(valueType) && numeric.contains(fieldType))
            || (fieldType == "REFERENCE" && names.contains(valueType))
    }
}
