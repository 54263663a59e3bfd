import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A `ListObjectsV2` answer's objects and continuation, read with Foundation's XML parser (keys may hold
/// any character, escaped as XML entities).
final class ListingParser: NSObject, XMLParserDelegate {
    struct Listing {
        var objects: [(key: String, size: Int64, lastModified: Date)] = []
        var truncated = false
        var next: String?
    }

    private var listing = Listing()
    private var text = ""
    private var key: String?
    private var size: Int64?
    private var modified: Date?

    static func parse(_ data: Data) throws -> Listing {
        let delegate = ListingParser()
        let parser = XMLParser(data: data)
        parser.delegate = delegate
        guard parser.parse() else {
            throw S3Error(status: 200, code: "MalformedListing", message: "the object store's listing is not XML it can read")
        }
        return delegate.listing
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        text = ""
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        switch elementName {
        case "Key": key = text
        case "Size": size = Int64(text)
        case "LastModified": modified = S3Dates.iso8601(text)
        case "Contents":
            if let key, let size { listing.objects.append((key, size, modified ?? .distantPast)) }
            (key, size, modified) = (nil, nil, nil)
        case "IsTruncated": listing.truncated = text == "true"
        case "NextContinuationToken": listing.next = text
        default: break
        }
    }
}
