import NimbusCore

/// Checks a JSON document against a JSON Schema of the OpenAPI document, for the subset of JSON Schema
/// the document uses: `$ref`, `type`, `properties`, `required`, `additionalProperties`, `items`, `enum`,
/// `oneOf` and `not` with `required`. Returns what does not conform, each with its path in the document.
struct SchemaCheck {
    let components: [String: JSONValue]

    init(document: JSONValue = OpenAPIDocument.document) {
        components = Dictionary(
            uniqueKeysWithValues: (document["components"]?["schemas"]?.members ?? []).map { ($0.0, $0.1) })
    }

    func problems(_ instance: JSONTree, against schema: JSONValue, at path: String = "$") -> [String] {
        if let reference = schema["$ref"]?.text {
            let name = String(reference.split(separator: "/").last ?? "")
            guard let target = components[name] else {
                return ["\(path): the schema names \(reference), which is not in the document"]
            }
            return problems(instance, against: target, at: path)
        }
        var found = [String]()
        if let type = schema["type"]?.text, !Self.matches(instance, type: type) {
            return ["\(path): \(Self.describe(instance)) where the document says \(type)"]
        }
        if let values = schema["enum"]?.elements, case .string(let text) = instance,
            !values.contains(where: { $0.text == text })
        {
            found.append("\(path): \"\(text)\" is not one of \(values.compactMap(\.text))")
        }
        if case .object(let members) = instance {
            let properties = schema["properties"]?.members ?? []
            for required in schema["required"]?.elements?.compactMap(\.text) ?? []
            where !members.contains(where: { $0.key == required }) {
                found.append("\(path): \(required) is required")
            }
            for (key, value) in members {
                if let property = properties.first(where: { $0.0 == key }) {
                    found += problems(value, against: property.1, at: "\(path).\(key)")
                } else if let additional = schema["additionalProperties"], additional.members != nil || additional.text != nil {
                    found += problems(value, against: additional, at: "\(path).\(key)")
                }
            }
        }
        if case .array(let elements) = instance, let items = schema["items"] {
            for (index, element) in elements.enumerated() { found += problems(element, against: items, at: "\(path)[\(index)]") }
        }
        if let choices = schema["oneOf"]?.elements {
            let matching = choices.filter { problems(instance, against: $0, at: path).isEmpty }.count
            if matching != 1 {
                found.append("\(path): matches \(matching) of the \(choices.count) schemas of oneOf, not exactly one")
            }
        }
        if let excluded = schema["not"]?["required"]?.elements?.compactMap(\.text), case .object(let members) = instance,
            excluded.allSatisfy({ key in members.contains { $0.key == key } })
        {
            found.append("\(path): has \(excluded), which the document excludes here")
        }
        return found
    }

    private static func matches(_ instance: JSONTree, type: String) -> Bool {
        switch (instance, type) {
        case (.object, "object"), (.array, "array"), (.string, "string"), (.bool, "boolean"), (.null, "null"),
            (.number, "number"):
            true
        case (.number(let text), "integer"): !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
        default: false
        }
    }

    private static func describe(_ instance: JSONTree) -> String {
        switch instance {
        case .null: "null"
        case .bool: "a boolean"
        case .number(let text): "the number \(text)"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension JSONValue {
    subscript(key: String) -> JSONValue? { members?.first { $0.0 == key }?.1 }
    var members: [(String, JSONValue)]? { if case .object(let members) = self { members } else { nil } }
    var elements: [JSONValue]? { if case .array(let elements) = self { elements } else { nil } }
    var text: String? { if case .string(let text) = self { text } else { nil } }
}
