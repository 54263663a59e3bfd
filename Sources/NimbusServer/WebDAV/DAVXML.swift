import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// An element of a WebDAV request body (`propfind`, `propertyupdate`, `lockinfo`), with its namespace
/// resolved: WebDAV names every element by namespace and local name, whatever prefix a client chose.
struct DAVElement: Sendable, Hashable {
    var namespace: String
    var name: String
    var attributes: [Attribute] = []
    var children: [DAVElement] = []
    /// The text directly inside the element.
    var text: String = ""

    var key: DAVPropertyName { DAVPropertyName(namespace: namespace, name: name) }

    /// An attribute by its namespace (empty: none) and local name.
    struct Attribute: Sendable, Hashable {
        var namespace: String
        var name: String
        var value: String
    }

    static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"

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
        func prefix(for namespace: String) -> String {
            let prefix = prefixes[namespace] ?? "n\(prefixes.count)"
            prefixes[namespace] = prefix
            if declared.insert(namespace).inserted {
                declarations += " xmlns:\(prefix)=\"\(DAVXMLWriter.escape(namespace))\""
            }
            return prefix
        }
        let qualified = namespace.isEmpty ? name : "\(prefix(for: namespace)):\(name)"
        var attributeText = ""
        for attribute in attributes.sorted(by: { ($0.namespace, $0.name) < ($1.namespace, $1.name) }) {
            let qualifiedAttribute =
                switch attribute.namespace {
                case "": attribute.name
                case Self.xmlNamespace: "xml:\(attribute.name)"
                default: "\(prefix(for: attribute.namespace)):\(attribute.name)"
                }
            attributeText += " \(qualifiedAttribute)=\"\(DAVXMLWriter.escape(attribute.value))\""
        }
        output += "<\(qualified)\(declarations)\(attributeText)>" + DAVXMLWriter.escape(text)
        for child in children { child.write(to: &output, prefixes: &prefixes, declared: declared) }
        output += "</\(qualified)>"
    }

    /// The root element of an XML body, or nil for a body that is not well-formed XML.
    static func parse(_ data: Data) -> DAVElement? {
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = true
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
        /// The namespaces each prefix stands for where the parser is, innermost last: attributes arrive with
        /// their prefixes only.
        var namespaces: [String: [String]] = [:]

        func parser(_ parser: XMLParser, didStartMappingPrefix prefix: String, toURI namespaceURI: String) {
            namespaces[prefix, default: []].append(namespaceURI)
        }

        func parser(_ parser: XMLParser, didEndMappingPrefix prefix: String) {
            _ = namespaces[prefix]?.popLast()
        }

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            guard stack.count < 64 else {
                failed = true
                parser.abortParsing()
                return
            }
            var kept: [Attribute] = []
            // Namespace declarations are the serializer's to write again.
            for (qualified, value) in attributes where qualified != "xmlns" && !qualified.hasPrefix("xmlns:") {
                let parts = qualified.split(separator: ":", maxSplits: 1).map(String.init)
                guard parts.count == 2 else {
                    kept.append(Attribute(namespace: "", name: qualified, value: value))
                    continue
                }
                let namespace = parts[0] == "xml" ? DAVElement.xmlNamespace : namespaces[parts[0]]?.last
                guard let namespace else {
                    failed = true
                    parser.abortParsing()
                    return
                }
                kept.append(Attribute(namespace: namespace, name: parts[1], value: value))
            }
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
