import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// An element of a WebDAV request body (`propfind`, `propertyupdate`, `lockinfo`), with its namespace
/// resolved: WebDAV names every element by namespace and local name, whatever prefix a client chose.
struct DAVElement: Sendable, Hashable {
    var namespace: String
    var name: String
    var attributes: [String: String] = [:]
    var children: [DAVElement] = []
    /// The text directly inside the element.
    var text: String = ""

    var key: DAVPropertyName { DAVPropertyName(namespace: namespace, name: name) }

    func child(_ name: String, namespace: String = DAVPropertyName.dav) -> DAVElement? {
        children.first { $0.name == name && $0.namespace == namespace }
    }

    /// The element as XML that stands alone: every namespace it uses declared on it, so that a dead
    /// property's value comes back as the client wrote it, whatever the response's own prefixes are.
    func serialized() -> String {
        var prefixes: [String: String] = [:]
        var output = ""
        write(to: &output, prefixes: &prefixes, declared: [])
        return output
    }

    private func write(to output: inout String, prefixes: inout [String: String], declared: Set<String>) {
        var declared = declared
        var declarations = ""
        let prefix = namespace.isEmpty ? nil : prefixes[namespace] ?? "n\(prefixes.count)"
        if let prefix {
            prefixes[namespace] = prefix
            if !declared.contains(namespace) {
                declarations += " xmlns:\(prefix)=\"\(DAVXMLWriter.escape(namespace))\""
                declared.insert(namespace)
            }
        }
        let qualified = prefix.map { "\($0):\(name)" } ?? name
        output += "<\(qualified)\(declarations)"
        for (attribute, value) in attributes.sorted(by: { $0.key < $1.key }) {
            output += " \(attribute)=\"\(DAVXMLWriter.escape(value))\""
        }
        output += ">" + DAVXMLWriter.escape(text)
        for child in children { child.write(to: &output, prefixes: &prefixes, declared: declared) }
        output += "</\(qualified)>"
    }

    /// The root element of an XML body, or nil for a body that is not well-formed XML.
    static func parse(_ data: Data) -> DAVElement? {
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        let builder = TreeBuilder()
        parser.delegate = builder
        guard parser.parse(), builder.failed == false else { return nil }
        return builder.root
    }

    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [DAVElement] = []
        var root: DAVElement?
        var failed = false

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            guard stack.count < 64 else {
                failed = true
                parser.abortParsing()
                return
            }
            // Namespace declarations are the serializer's to write again; other attributes are kept.
            let kept = attributes.filter { !$0.key.hasPrefix("xmlns") }
            stack.append(DAVElement(namespace: namespaceURI ?? "", name: elementName, attributes: kept))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            guard var element = stack.popLast() else { return }
            // Whitespace between child elements is layout, not a value.
            if !element.children.isEmpty, element.text.allSatisfy(\.isWhitespace) { element.text = "" }
            if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) { failed = true }
    }
}

/// A property's name: its namespace and local name.
struct DAVPropertyName: Hashable, Sendable, Codable, Comparable {
    static let dav = "DAV:"
    var namespace: String
    var name: String

    static func dav(_ name: String) -> DAVPropertyName { DAVPropertyName(namespace: dav, name: name) }
    static func < (a: DAVPropertyName, b: DAVPropertyName) -> Bool { (a.namespace, a.name) < (b.namespace, b.name) }
}

/// Writes `multistatus` and other response bodies. Elements of the `DAV:` namespace take the `D` prefix;
/// a property of another namespace declares its own on the element.
struct DAVXMLWriter {
    private(set) var text = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"

    mutating func open(_ name: String, attributes: String = "") { text += "<D:\(name)\(attributes)>" }
    mutating func close(_ name: String) { text += "</D:\(name)>" }
    mutating func element(_ name: String, _ value: String) { text += "<D:\(name)>\(Self.escape(value))</D:\(name)>" }
    mutating func raw(_ xml: String) { text += xml }

    /// An empty property element (`<D:getetag/>`, or one of another namespace with its declaration).
    mutating func empty(_ property: DAVPropertyName) {
        text +=
            property.namespace == DAVPropertyName.dav
            ? "<D:\(property.name)/>"
            : property.namespace.isEmpty
                ? "<\(property.name) xmlns=\"\"/>" : "<X:\(property.name) xmlns:X=\"\(Self.escape(property.namespace))\"/>"
    }

    static let multistatusOpening = " xmlns:D=\"DAV:\""

    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
