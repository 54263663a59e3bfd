/// What deploying a development schema to production would change, and what production refuses.
///
/// Production schemas are additive-only, as in CloudKit: new types, fields, indexes, roles and grants
/// may be added; removing a type or field, or changing a field's type, is refused.
package struct SchemaDiff: Hashable, Sendable {
    package enum Change: Hashable, Sendable, CustomStringConvertible {
        case addRole(String)
        case addRecordType(String)
        case addField(recordType: String, field: String, type: String)
        case addIndex(recordType: String, field: String, index: String)
        case removeIndex(recordType: String, field: String, index: String)
        case changeGrants(recordType: String)

        package var description: String {
            switch self {
            case .addRole(let role): "+ role \(role)"
            case .addRecordType(let type): "+ record type \(type)"
            case .addField(let type, let field, let fieldType): "+ field \(type).\(field) \(fieldType)"
            case .addIndex(let type, let field, let index): "+ index \(index) on \(type).\(field)"
            case .removeIndex(let type, let field, let index): "- index \(index) on \(type).\(field)"
            case .changeGrants(let type): "~ grants of \(type)"
            }
        }
    }

    package enum Violation: Hashable, Sendable, CustomStringConvertible {
        case removesRecordType(String)
        case removesField(recordType: String, field: String)
        case changesFieldType(recordType: String, field: String, from: String, to: String)

        package var description: String {
            switch self {
            case .removesRecordType(let type): "record type \(type) exists in production and cannot be removed"
            case .removesField(let type, let field): "field \(type).\(field) exists in production and cannot be removed"
            case .changesFieldType(let type, let field, let from, let to):
                "field \(type).\(field) is \(from) in production and cannot become \(to)"
            }
        }
    }

    package var changes: [Change]
    package var violations: [Violation]

    /// Whether deploying is allowed (nothing production refuses).
    package var isDeployable: Bool { violations.isEmpty }

    /// Compares `production` with the `development` schema that would replace it.
    package init(from production: Schema, to development: Schema) {
        changes = development.roles.filter { !production.roles.contains($0) }.map(Change.addRole)
        violations = []
        for old in production.recordTypes where !development.recordTypes.contains(where: { $0.name == old.name }) {
            violations.append(.removesRecordType(old.name))
        }
        for type in development.recordTypes {
            guard let old = production.recordTypes.first(where: { $0.name == type.name }) else {
                changes.append(.addRecordType(type.name))
                changes += type.fields.map { .addField(recordType: type.name, field: $0.name, type: $0.wireType) }
                continue
            }
            for field in old.fields where !type.fields.contains(where: { $0.name == field.name }) {
                violations.append(.removesField(recordType: type.name, field: field.name))
            }
            for field in type.fields {
                guard let oldField = old.fields.first(where: { $0.name == field.name }) else {
                    changes.append(.addField(recordType: type.name, field: field.name, type: field.wireType))
                    continue
                }
                if oldField.wireType != field.wireType || oldField.isEncrypted != field.isEncrypted {
                    violations.append(
                        .changesFieldType(recordType: type.name, field: field.name, from: oldField.wireType, to: field.wireType))
                }
                for (index, was, now) in [
                    ("QUERYABLE", oldField.queryable, field.queryable), ("SORTABLE", oldField.sortable, field.sortable),
                    ("SEARCHABLE", oldField.searchable, field.searchable),
                ] where was != now {
                    changes.append(
                        now
                            ? .addIndex(recordType: type.name, field: field.name, index: index)
                            : .removeIndex(recordType: type.name, field: field.name, index: index))
                }
            }
            if Set(old.grants.map { "\($0.role):\($0.permissions)" }) != Set(type.grants.map { "\($0.role):\($0.permissions)" }) {
                changes.append(.changeGrants(recordType: type.name))
            }
        }
    }
}
